// Command kube-controller-manager is the upstream controller manager, built from the same pinned
// release as kube-apiserver, so that Jobs, ReplicaSets and Deployments make pods in the local
// control plane, PodDisruptionBudgets get their status and deleted namespaces are emptied.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
