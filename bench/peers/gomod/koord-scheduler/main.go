// Command koord-scheduler is Koordinator's scheduler with the plugins its release registers; the
// bench runs it as a peer with the scheduler profile Koordinator ships.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as in the release
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/koordinator-sh/koordinator/cmd/koord-scheduler/app"
	// Registers the plugins' argument types with the scheduler's configuration scheme.
	_ "github.com/koordinator-sh/koordinator/pkg/scheduler/apis/config/scheme"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/coscheduling"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/defaultprebind"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/deviceshare"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/elasticquota"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/loadaware"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/nodenumaresource"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/noderesourcefitplus"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/reservation"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/scarceresourceavoidance"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/schedulinghint"
)

func main() {
	factories := []struct {
		name    string
		factory frameworkruntime.PluginFactory
	}{
		{coscheduling.Name, coscheduling.New},
		{defaultprebind.Name, defaultprebind.New},
		{deviceshare.Name, deviceshare.New},
		{elasticquota.Name, elasticquota.New},
		{loadaware.Name, loadaware.New},
		{nodenumaresource.Name, nodenumaresource.New},
		{noderesourcesfitplus.Name, noderesourcesfitplus.New},
		{reservation.Name, reservation.New},
		{scarceresourceavoidance.Name, scarceresourceavoidance.New},
		{schedulinghint.Name, schedulinghint.New},
	}
	options := make([]app.Option, 0, len(factories))
	for _, f := range factories {
		options = append(options, app.WithPlugin(f.name, f.factory))
	}
	os.Exit(cli.Run(app.NewSchedulerCommand(options...)))
}
