//go:build tools

// Package tools pins Karpenter's KWOK provider so that
// `go build sigs.k8s.io/karpenter/kwok` resolves against this module's go.sum.
package tools

import _ "sigs.k8s.io/karpenter/kwok"
