"""The Kubernetes API: clients that cannot hang, plain-dict REST, kubeconfigs and key files checked first,
per-request deadlines, resource.k8s.io facts per server minor, the owner labels."""
