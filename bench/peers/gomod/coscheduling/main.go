// Command coscheduling is kube-scheduler with scheduler-plugins' Coscheduling plugin, the gang
// scheduler many clusters add to the default scheduler; the bench runs it as a peer.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// Registers CoschedulingArgs with the scheduler's configuration scheme.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(coscheduling.Name, coscheduling.New))
	os.Exit(cli.Run(command))
}
