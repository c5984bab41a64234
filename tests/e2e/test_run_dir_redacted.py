"""A session's cluster run directory outlives the session for diagnostics: once the session is
over, its private keys are redacted, its certificates and logs are not gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.controlplane.build import cache_root
from harness.core.versions import REPO_ROOT

CACHE = cache_root()  # read before pytester points HOME at its directory


def _with(run_dir: Path, text: str) -> list[str]:
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    return sorted(p.name for p in files if text.encode() in p.read_bytes())


def test_a_finished_session_leaves_no_private_key_in_its_run_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = pytester.path / "clusters"
    monkeypatch.setenv("DRA_HARNESS_RUN_DIR", str(run_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(CACHE.parent))  # the built control plane, not a new build
    pytester.makeconftest((REPO_ROOT / "conftest.py").read_text())
    pytester.makepyfile(test_up="def test_up(cluster):\n    assert cluster.kubeconfig.exists()\n")

    result = pytester.runpytest_subprocess("-p", "no:pytest-kind", "-p", "no:cacheprovider", timeout=600)

    result.assert_outcomes(passed=1)
    assert _with(run_dir, "PRIVATE KEY-----") == []
    assert "ca.key" in _with(run_dir, "<redacted> private key")
    assert "ca.crt" in _with(run_dir, "-----BEGIN CERTIFICATE-----")
    assert "kube-apiserver.log" in [p.name for p in run_dir.rglob("*.log")]
