"""The fleet file (pools of nodes) and its validation, raw pools, the per-node fault state rendering and
publishing read."""
