"""`dra-harness scan`: the read-only readiness scan of a live cluster (cluster), its
pre-upgrade findings for a target minor (target) and its view of device taints (taints)."""
