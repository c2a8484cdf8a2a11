//go:build tools

// Package tools pins Helm for `go build helm.sh/helm/v3/cmd/helm`: the chart in charts/ is
// linted and rendered with it in `make test`.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
