// Command kube-apiserver is the upstream API server, built from a pinned release so that the
// local control plane needs no container runtime.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
