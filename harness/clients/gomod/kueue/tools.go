//go:build tools

// Package tools pins Kueue's manager so that
// `go build sigs.k8s.io/kueue/cmd/kueue` resolves against this module's go.sum.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
