//go:build tools

// Package tools pins KubeRay's ray-operator command so that
// `go build github.com/ray-project/kuberay/ray-operator` resolves against this module's go.sum.
package tools

import _ "github.com/ray-project/kuberay/ray-operator"
