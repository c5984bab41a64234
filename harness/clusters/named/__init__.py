"""Named long-lived local clusters: `cluster up|down|status` (lifecycle), the supervisor
that keeps one running (supervisor), its GPU fleet (gpufleet, demo-fleet.yaml) and
`cluster upgrade` (upgrade)."""
