"""`dra-harness upgrade`: the rehearsal's workloads (rehearsal) and the upgrade report
(report). The step itself is the cluster's: harness.clusters.local.cluster.upgrade (control
plane, then kubelets: harness.clusters.local.cluster.kubelets) and, for a named cluster,
harness.clusters.named.lifecycle.upgrade; the upstream facts are harness.core.upgrade_facts."""
