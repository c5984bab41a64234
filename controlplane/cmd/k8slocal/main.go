// Command k8slocal is a multi-call binary holding the real Kubernetes control plane
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) built from the
// k8s.io/kubernetes module. Each component still runs as its own OS process: the
// harness starts `k8slocal <component> [flags]`, so process-global state (feature
// gates, klog flags, metrics registries) never clashes and one component can be
// restarted alone.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	_ "time/tzdata" // CronJob time zones, as upstream's kube-apiserver main does

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/pkg/features" // registers every Kubernetes feature gate
)

const usage = "usage: k8slocal {etcd|kube-apiserver|kube-scheduler|kube-controller-manager|featuregates} [flags]"

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "k8slocal" {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	switch name {
	case "etcd":
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "kube-apiserver":
		run(apiserver.NewAPIServerCommand(), args)
	case "kube-scheduler":
		run(scheduler.NewSchedulerCommand(), args)
	case "kube-controller-manager":
		run(controllermanager.NewControllerManagerCommand(), args)
	case "featuregates":
		printFeatureGates()
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}

func run(cmd *cobra.Command, args []string) {
	cmd.SetArgs(args)
	os.Exit(cli.Run(cmd))
}

type gate struct {
	Name       string `json:"name"`
	Default    bool   `json:"default"`
	PreRelease string `json:"preRelease"`
	Locked     bool   `json:"lockedToDefault"`
}

// printFeatureGates prints every gate this build knows as JSON, so the harness can
// validate a gate profile against the binary instead of trusting a hand-kept list.
func printFeatureGates() {
	var gates []gate
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		gates = append(gates, gate{string(name), spec.Default, string(spec.PreRelease), spec.LockToDefault})
	}
	sort.Slice(gates, func(i, j int) bool { return gates[i].Name < gates[j].Name })
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(gates); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
