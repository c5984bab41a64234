"""helm (versions.toml [tools.helm], built from the module proxy) run with its own config, cache
and data directories, so nothing of the user's helm set-up is read or changed."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.controlplane.tools import ensure_tool
from harness.core.errors import HarnessError

HELM_TIMEOUT = 300  # seconds: an install with --wait is bounded by its own --timeout below this


def run_helm(
    args: Sequence[str], *, kubeconfig: Path | None = None, helm: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """helm with `args`; never raises on a non-zero exit (callers read stderr)."""
    binary = helm or ensure_tool("helm")
    with tempfile.TemporaryDirectory(prefix="dra-harness-helm-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_")}
        env |= {f"HELM_{d}_HOME": str(Path(home) / d.lower()) for d in ("CACHE", "CONFIG", "DATA")}
        if kubeconfig is not None:
            env["KUBECONFIG"] = str(kubeconfig)
        try:
            return subprocess.run(
                [str(binary), *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=HELM_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HarnessError(f"helm {' '.join(args[:2])} took over {HELM_TIMEOUT}s") from None


def helm_ok(args: Sequence[str], **kw: Path | None) -> str:
    """helm's stdout, or one line: its first error line."""
    done = run_helm(args, **kw)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()] or [f"exit {done.returncode}"]
        raise HarnessError(f"helm {args[0]}: {lines[0]}")
    return done.stdout
