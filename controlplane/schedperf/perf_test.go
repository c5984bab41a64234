// Package schedperf runs upstream's scheduler_perf framework
// (k8s.io/kubernetes/test/integration/scheduler_perf) on a performance-config that
// dra-harness generates from the benchmark's fleet (harness/bench/reference.py). The
// config's path comes from the environment, so one test binary per Kubernetes version
// serves every fleet size.
package schedperf

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
)

const configEnv = "DRA_HARNESS_PERF_CONFIG"

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	m.Run()
}

// BenchmarkPerfScheduling leaves the allocator to the scheduler's own choice by feature
// gates, as the benchmark's real kube-scheduler makes it.
func BenchmarkPerfScheduling(b *testing.B) {
	config := os.Getenv(configEnv)
	if config == "" {
		b.Fatalf("%s names no performance-config", configEnv)
	}
	perf.RunBenchmarkPerfScheduling(b, config, "dra_harness", nil)
}
