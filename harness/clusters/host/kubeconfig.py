"""Kubeconfig files for the local cluster's users (admin, controllers)."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.clusters.host.pki import CertPair, write_private


def write_kubeconfig(path: Path, server: str, ca: Path, user: str, client: CertPair) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "dra-harness", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {"name": user, "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}
        ],
        "contexts": [{"name": "dra-harness", "context": {"cluster": "dra-harness", "user": user}}],
        "current-context": "dra-harness",
    }
    write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
    return path
