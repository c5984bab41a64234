"""`cluster up` that is not ready in time (issue 41: a fleet at the 5,000-node cap) says so in
one line: how long it waited, the supervisor's last line and where the logs are, not the
whole record pretty-printed over ten lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.clusters.host.identity import ProcessIdentity
from harness.clusters.named import lifecycle, records
from harness.core.errors import HarnessError


def test_a_start_not_ready_in_time_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "READY_TIMEOUT", 1.0)
    supervisor = subprocess.Popen(["sleep", "60"])  # a supervisor still starting
    try:
        record = records.ClusterRecord(
            "big", "1.37", "v1.37.2", "dra-all", "starting", ProcessIdentity.of(supervisor.pid), ""
        )
        records.write_record(tmp_path, record)
        (tmp_path / records.LOG).write_text("fleet: 5000 nodes: creating\n")
        with pytest.raises(HarnessError) as raised:
            lifecycle._await_ready(tmp_path, record, supervisor)
    finally:
        supervisor.kill()
        supervisor.wait()
    assert str(raised.value) == (
        "cluster 'big' was not ready within 1 s and is stopped; its supervisor's last line: "
        f"fleet: 5000 nodes: creating; logs in {tmp_path / 'logs'}"
    )
