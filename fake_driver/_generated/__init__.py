"""Generated gRPC code for the kubelet APIs; see SOURCE for the upstream version. Do not edit."""
