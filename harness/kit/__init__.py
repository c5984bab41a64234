"""The test kit: what a test body calls (the Kubernetes client, builders, objects, waits,
pods, DRA state, device status, gangs, CEL, the installed fleet's inventory) and the
checks over API objects (checks/). The public surface vendors' tests import. Knows no
cluster provider: below harness.clusters, above harness.core."""
