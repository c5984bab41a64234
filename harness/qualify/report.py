"""The qualification report: qualify.json and qualify.html (one self-contained file, inline
CSS, no scripts, like the readiness report), next to pytest's junit.xml and summary.json; then,
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

import jinja2

from harness.controlplane.gates import dra_gates
from harness.core.redaction import redact_obj
from harness.core.versions import REPO_ROOT
from harness.qualify.capabilities import CapabilityResult, Verdict
from harness.qualify.inventory import KindInventory
from harness.qualify.preflight import ClusterFacts

TEMPLATES = REPO_ROOT / "reports" / "templates"
TARBALL = "results.tar.gz"


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
    generated: str = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    )

    @property
    def exit_code(self) -> int:
        """0: every capability that ran passed; 3: a failure."""
        return (
            3 if any(c.verdict is Verdict.FAIL for c in self.capabilities) or self.totals.get("failed") else 0
        )

    def to_json(self) -> dict[str, Any]:
        counts = {str(v): sum(c.verdict is v for c in self.capabilities) for v in Verdict}
        return {
            "driver": self.driver,
            "tested": self.tested,
            "device_class": self.device_class,
            "extended_resource": self.extended_resource,
            "command": self.command,
            "generated": self.generated,
            "wall_seconds": round(self.wall_seconds, 1),
            "exit_code": self.exit_code,
            "counts": counts,
            "totals": self.totals,
            "cluster": self.cluster.to_json(),
            "capabilities": [c.to_json() for c in self.capabilities],
            "inventory": [k.to_json() for k in self.inventory],
        }


def _html(data: dict[str, Any]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
    )
    shown = dra_gates(data["cluster"]["gates"])
    view = {**data, "cluster": {**data["cluster"], "gates": shown}}
    return env.get_template("qualify.html.j2").render(q=view)


def write_report(q: Qualification, out: Path) -> Path:
    """qualify.json + qualify.html in `out`, then the tarball and `done`; returns the tarball."""
    data = redact_obj(q.to_json())
    (out / "qualify.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "qualify.html").write_text(_html(data))
    tarball = out / TARBALL
    with tarfile.open(tarball, "w:gz") as tar:
        for path in sorted(out.iterdir()):
            if path.name not in (TARBALL, "done"):
                tar.add(path, arcname=path.name)
    (out / "done").write_text(str(tarball.resolve()))
    return tarball
