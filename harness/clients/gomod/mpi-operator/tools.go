//go:build tools

// Package tools pins the MPI operator command so that
// `go build github.com/kubeflow/mpi-operator/cmd/mpi-operator` resolves against this module's
// go.sum.
package tools

import _ "github.com/kubeflow/mpi-operator/cmd/mpi-operator"
