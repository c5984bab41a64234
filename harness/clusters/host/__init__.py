"""Plumbing every provider shares on the host: owned child processes, process identity,
PKI and kubeconfigs, free ports, health probes, host state real nodes change, run dirs."""
