"""The qualification report: qualify.json, qualify.html (one self-contained file, inline
CSS, no scripts, like the readiness report) and qualify.md (e.g. for a CI job summary), each
with a legend of the verdict words, next to pytest's junit.xml and summary.json; then,
as Sonobuoy plugins hand results to their worker, a tarball of the directory and a `done` file
holding the tarball's path (vmware-tanzu/sonobuoy site/content/docs/main/plugins.md, "Plugin
result types": the worker waits for `<results dir>/done`, which names the file to collect).
"""

from __future__ import annotations

import datetime
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.controlplane.gates import dra_gates
from harness.core.redaction import redact_obj
from harness.qualify.capabilities import CAPABILITY_WORDS, CapabilityResult, Verdict
from harness.qualify.inventory import KindInventory
from harness.qualify.preflight import ClusterFacts
from harness.reports.templates import environment
from harness.reports.verdicts import legend

TARBALL = "results.tar.gz"
# The run's verdict and its exit code (docs/qualify.md; action.yml's `verdict` maps them back).
# 2 is argparse's usage error, so none of qualify's own.
EXIT_CODES: dict[Verdict, int] = {
    Verdict.PASS: 0,
    Verdict.ERROR: 1,
    Verdict.FAIL: 3,
    Verdict.NOTHING_RAN: 4,
    Verdict.FLAKY: 5,
}
RUN_WORDS = (Verdict.PASS, Verdict.FLAKY, Verdict.FAIL, Verdict.NOTHING_RAN, Verdict.ERROR)
# pytest's own exit codes that end a run as an outcome: OK, tests failed, none collected.
_PYTEST_RAN = (0, 1, 5)


@dataclass
class Qualification:
    driver: str
    device_class: str
    extended_resource: str
    command: str
    cluster: ClusterFacts
    capabilities: list[CapabilityResult] = field(default_factory=list)
    inventory: list[KindInventory] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    wall_seconds: float = 0.0
    tested: str = ""  # harness.reports.summary.what_was_tested of the run's cell
    pytest_exit: int = 0  # pytest's own exit code: a failure it saw is one, summary.json or not
    generated: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    )

    @property
    def verdict(self) -> Verdict:
        """The run's word: a failure or error anywhere (a capability, a test's phase, pytest's
        own exit) is FAIL, or ERROR when pytest did not complete; NOTHING RAN when not one
        test passed; FLAKY when a capability passed only on a rerun."""
        failed = self.totals.get("failed") or self.totals.get("errors") or self.pytest_exit == 1
        if failed or any(c.verdict is Verdict.FAIL for c in self.capabilities):
            return Verdict.FAIL
        if self.pytest_exit not in _PYTEST_RAN:  # interrupted, an internal or usage error
            return Verdict.ERROR
        if not self.totals.get("passed"):
            return Verdict.NOTHING_RAN
        return Verdict.FLAKY if any(c.verdict is Verdict.FLAKY for c in self.capabilities) else Verdict.PASS

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_json(self) -> dict[str, Any]:
        counts = {str(v): sum(c.verdict is v for c in self.capabilities) for v in CAPABILITY_WORDS}
        return {
            "driver": self.driver,
            "tested": self.tested,
            "device_class": self.device_class,
            "extended_resource": self.extended_resource,
            "command": self.command,
            "generated": self.generated,
            "wall_seconds": round(self.wall_seconds, 1),
            "verdict": str(self.verdict),
            "exit_code": self.exit_code,
            "pytest_exit": self.pytest_exit,
            "counts": counts,
            "totals": self.totals,
            "cluster": self.cluster.to_json(),
            "capabilities": [c.to_json() for c in self.capabilities],
            "inventory": [k.to_json() for k in self.inventory],
        }


def _render(data: dict[str, Any], template: str) -> str:
    """qualify.html or qualify.md: the data, the DRA gates only, and the legend of the words."""
    env = environment()
    shown = dra_gates(data["cluster"]["gates"])
    view = {**data, "cluster": {**data["cluster"], "gates": shown}}
    run = [{**w, "exit": str(EXIT_CODES[Verdict(w["word"])])} for w in legend(RUN_WORDS)]
    words = {"capability": legend(CAPABILITY_WORDS), "run": run}
    return env.get_template(template).render(q=view, legend=words)


def write_report(q: Qualification, out: Path) -> Path:
    """qualify.json + qualify.html in `out`, then the tarball and `done`; returns the tarball."""
    data = redact_obj(q.to_json())
    (out / "qualify.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "qualify.html").write_text(_render(data, "qualify.html.j2"))
    (out / "qualify.md").write_text(_render(data, "qualify.md.j2"))
    tarball = out / TARBALL
    with tarfile.open(tarball, "w:gz") as tar:
        for path in sorted(out.iterdir()):
            if path.name not in (TARBALL, "done"):
                tar.add(path, arcname=path.name)
    (out / "done").write_text(str(tarball.resolve()))
    return tarball
