"""Real nodes of a LocalCluster: pools (pools), one node's namespace, containerd, kubelet
and plugins (node), and its configuration files (config)."""
