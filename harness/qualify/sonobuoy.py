"""qualify as a Sonobuoy plugin: its definition (deploy/qualify/sonobuoy-plugin.yaml, generated
by `dra-harness qualify --print-sonobuoy-plugin`), from pkg/plugin/manifest/manifest.go of
vmware-tanzu/sonobuoy v0.57.5: `sonobuoy-config` (driver Job, plugin name, result format and
files) and `spec`, the container. In it, qualify writes to $SONOBUOY_RESULTS_DIR (its default
--out there), ends with `done` naming results.tar.gz, and posts progress as tests finish
(harness.kit.sonobuoy).

The driver to qualify comes from the container's environment, which `sonobuoy run
--plugin-env dra-qualify.DRIVER_NAME=gpu.nvidia.com` overrides.
"""

from __future__ import annotations

import yaml

from harness.clusters.kind.images.harnessimage import HARNESS_IMAGE
from harness.kit.kube import Obj
from harness.kit.sonobuoy import PLUGIN_NAME
from harness.qualify.job import qualify_container

RESULTS_MOUNT = "/tmp/sonobuoy/results"  # Sonobuoy's default results directory and volume


def plugin_manifest(image: str = HARNESS_IMAGE) -> Obj:
    container = qualify_container("$(SONOBUOY_RESULTS_DIR)", image)
    return {
        "sonobuoy-config": {
            "driver": "Job",
            "plugin-name": PLUGIN_NAME,
            "result-format": "junit",
            "result-files": ["junit.xml"],
            "description": "dra-harness qualify: a DRA driver's capabilities, PASS/FAIL/NOT SUPPORTED",
        },
        "spec": container
        | {"name": "plugin", "volumeMounts": [{"name": "results", "mountPath": RESULTS_MOUNT}]},
    }


def plugin_yaml() -> str:
    """deploy/qualify/sonobuoy-plugin.yaml's text (tests/harness/qualify/test_qualify_sonobuoy.py keeps it
    equal)."""
    head = "# sonobuoy run --plugin deploy/qualify/sonobuoy-plugin.yaml \\\n"
    head += "#     --plugin-env dra-qualify.DRIVER_NAME=... --plugin-env dra-qualify.DEVICE_CLASS=...\n"
    head += (
        "# (generated: dra-harness qualify --print-sonobuoy-plugin > deploy/qualify/sonobuoy-plugin.yaml).\n"
    )
    return head + yaml.safe_dump(plugin_manifest(), sort_keys=False)
