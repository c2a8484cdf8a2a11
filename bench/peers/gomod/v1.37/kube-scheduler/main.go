// Command kube-scheduler is the upstream default scheduler, built from the same pinned release as
// kube-apiserver; the bench runs it as a peer on plain pods.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
