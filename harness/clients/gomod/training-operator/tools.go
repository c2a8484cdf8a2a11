//go:build tools

// Package tools pins the training-operator command so that
// `go build github.com/kubeflow/training-operator/cmd/training-operator.v1` resolves against this
// module's go.sum.
package tools

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
