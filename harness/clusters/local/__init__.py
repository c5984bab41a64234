"""The local provider: LocalCluster (cluster), its components table (components), and its
in-place upgrade: the control plane (upgrade), then the real nodes' kubelets (kubelets)."""
