"""Per-cell report files that are not pytest's own: summary.json, and the allure side files
(environment.properties, categories.json). Plain functions, so the matrix runner and the
readiness report read and write the same shapes. write_report_files writes a report's files
(the upgrade report's among them) through the one redaction.

summary.json (one per cell run):
    {"cell": {"provider", "minor", "kubernetes", "profile", "driver", "personality"},
     "commit": str,                 # git rev-parse HEAD of the harness, "unknown" outside a checkout
     "versions": {name: version},   # what the cell's cluster was built from (run_versions)
     "load_before_1m": float | null,  # the machine's 1-minute load average before the run
     "totals": {"passed", "failed", "skipped", "errors"},
     "wall_seconds": float,
     "tests": [{"nodeid", "area", "outcome", "duration", "message",
                "reasons": [Reason.to_json()],   # reasons: why a skipped test did not run
                "rerun": str,                    # only when an earlier attempt failed
                "phases": {"setup"|"call"|"teardown": "passed"|"failed"|"skipped"}}]}
A test's outcome is its worst phase's: a teardown that failed after a passed call is "errors"
(its message says "teardown: ..."). Files written before reasons existed read with no
reasons; before phases, with none; before commit, versions and load, with "", {} and null.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fake_driver.facts.personalities import PERSONALITIES
from harness.clusters.kind.config import kube_proxy_fact, kube_proxy_mode
from harness.core.drivers import is_driver_ref
from harness.core.errors import HarnessError
from harness.core.redaction import redact, redact_obj
from harness.core.requirements import Reason
from harness.core.versions import REPO_ROOT, Matrix

OUTCOMES = ("passed", "failed", "skipped", "errors")
# The machine's load before a run, set by `dra-harness matrix` (taken once, before its builds
# and cells add to it) for each cell's summary.json; a single run takes it itself.
LOAD_ENV = "DRA_HARNESS_LOAD_BEFORE"

# Which failures are whose: allure sorts failed tests by the first category that matches.
CATEGORIES: list[dict[str, Any]] = [
    {
        "name": "infrastructure",
        "matchedStatuses": ["broken", "failed"],
        "messageRegex": r".*(ComponentFailed|exited early|cluster:|Connection refused|MaxRetryError"
        r"|HarnessError).*",
    },
    {
        "name": "driver",
        "matchedStatuses": ["broken", "failed"],
        "messageRegex": r".*(PublishError|InstallRefusedError|fake_driver|ApiError).*",
    },
    {
        "name": "kubernetes",
        "matchedStatuses": ["failed"],
        "messageRegex": r".*(timed out after|expected .* for|assert).*",
    },
    {"name": "harness", "matchedStatuses": ["broken"]},
]


@dataclass
class TestRecord:
    __test__ = False  # a record of a test, not a test class for pytest to collect

    nodeid: str
    area: str
    outcome: str  # passed | failed | skipped | errors
    duration: float
    message: str = ""
    reasons: list[Reason] = field(default_factory=list)
    # The failure of an earlier attempt (pytest-rerunfailures' --reruns): a test that passed
    # with one is FLAKY, never a plain pass ("" when it ran once).
    rerun: str = ""
    # Each phase pytest ran and its outcome; {} in files written before phases were recorded.
    phases: dict[str, str] = field(default_factory=dict)

    @property
    def flaky(self) -> bool:
        return self.outcome == "passed" and bool(self.rerun)

    def to_json(self) -> dict[str, Any]:
        out = {**asdict(self), "reasons": [r.to_json() for r in self.reasons]}
        for key in ("rerun", "phases"):
            if not out[key]:
                del out[key]  # files stay as they were for tests that ran once, and old records
        return out


@dataclass
class CellSummary:
    cell: dict[str, str]
    tests: list[TestRecord] = field(default_factory=list)
    wall_seconds: float = 0.0
    commit: str = ""  # "" in files written before it was recorded
    versions: dict[str, str] = field(default_factory=dict)
    load_before_1m: float | None = None

    @property
    def totals(self) -> dict[str, int]:
        counts = dict.fromkeys(OUTCOMES, 0)
        for t in self.tests:
            counts[t.outcome] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell,
            "commit": self.commit,
            "versions": self.versions,
            "load_before_1m": None if self.load_before_1m is None else round(self.load_before_1m, 2),
            "totals": self.totals,
            "wall_seconds": round(self.wall_seconds, 1),
            "tests": [t.to_json() for t in self.tests],
        }


# What the cell's nodes were (fixtures.artifacts.reporting's "nodes" key): the header says it in words.
NODES_TEXT = {
    "kwok": "simulated nodes (kwok) of a local control plane; the node suites on real kubelets of their own",
    "real": "real kubelets of a local control plane",
    "kind": "kind nodes (real kubelets in containers)",
    "existing": "the nodes of the cluster the kubeconfig names",
}


def personality_provenance(name: str) -> str:
    """How the personality's rendering was checked (fake_driver.facts.personalities, its one place);
    "" for a name the fake driver does not know (a report from another checkout)."""
    personality = PERSONALITIES.get(name)
    return personality.provenance if personality else ""


def what_was_tested(cell: dict[str, str]) -> str:
    """One line a reader cannot take for a verdict on a vendor's driver when it was the fake
    driver on simulated nodes: which driver (fake personality, the stand-in, or a real driver and
    its release) on which kind of nodes."""
    driver, personality = cell.get("driver", "?"), cell.get("personality", "")
    release = cell.get("driver_release", "")
    if personality and personality != "external" and not is_driver_ref(personality):
        checked = f"; {provenance}" if (provenance := personality_provenance(personality)) else ""
        who = (
            f"the harness's fake driver imitating {personality} (driver name {driver}{checked}), "
            "not a vendor's driver"
        )
    else:
        who = f"the driver {driver} ({release or 'release not given'})"
    nodes = NODES_TEXT.get(cell.get("nodes", ""), "")
    return f"{who}, on {nodes}" if nodes else who


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checkout's HEAD (a "-dirty" suffix when tracked files changed), "unknown" outside
    a git checkout or without git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    commit = head.stdout.strip()
    if head.returncode or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return "unknown"
    return commit + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def run_versions(matrix: Matrix, minor: str, provider: str, *, real_nodes: bool = False) -> dict[str, str]:
    """What a cell's cluster is built from: the Kubernetes release and, per provider, kwok
    (local), containerd (local, real nodes), or kind and its node image (kind). An existing
    cluster's release is the server's, not ours: only the minor asked for is known."""
    m = matrix.minor(minor)
    if provider == "kind":
        proxy = kube_proxy_fact(m, kube_proxy_mode(m))
        return {
            "kubernetes": m.kubernetes,
            "kind": matrix.kind_version,
            "kind_image": m.kind_image,
            "kube_proxy": proxy,
        }
    if provider == "local":
        out = {"kubernetes": m.kubernetes, "kwok": matrix.kwok_version}
        return out | ({"containerd": matrix.nodes.containerd_version} if real_nodes else {})
    return {"minor": m.name}


def area_of(nodeid: str) -> str:
    """suites/<area>/... -> area; the harness's own tests are "harness"."""
    parts = nodeid.split("/")
    return parts[1] if parts[0] == "suites" and len(parts) > 2 else "harness"


class SummaryError(HarnessError):
    """A summary.json that cannot be read; the message names the file and the field."""


_MINOR = re.compile(r"\d+\.\d+")
_RECORD_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "nodeid": (str, "a string"),
    "area": (str, "a string"),
    "outcome": (str, "a string"),
    "duration": ((int, float), "a number"),
    "message": (str, "a string"),
    "reasons": (list, "a list"),
    "rerun": (str, "a string"),
    "phases": (dict, "an object"),
}
_OPTIONAL: dict[str, object] = {"message": "", "reasons": [], "rerun": "", "phases": {}}
PHASES = ("setup", "call", "teardown")


class _Reader:
    """Errors that name the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def bad(self, field: str, want: str, value: object) -> SummaryError:
        return SummaryError(f"{self.path} is not a summary.json: {field} must be {want}, got {value!r}")

    def record(self, raw: object, where: str) -> TestRecord:
        if not isinstance(raw, dict):
            raise self.bad(where, "an object", raw)
        unknown = sorted(raw.keys() - _RECORD_FIELDS.keys())
        if unknown:
            raise SummaryError(
                f"{self.path} is not a summary.json: {where} has an unknown field {unknown[0]!r}"
            )
        for key, (kind, want) in _RECORD_FIELDS.items():
            value = raw.get(key, _OPTIONAL.get(key))
            if isinstance(value, bool) or not isinstance(value, kind):
                raise self.bad(f"{where}.{key}", want, value)
        if raw["outcome"] not in OUTCOMES:
            raise self.bad(f"{where}.outcome", f"one of {', '.join(OUTCOMES)}", raw["outcome"])
        for phase, outcome in raw.get("phases", {}).items():
            if phase not in PHASES or outcome not in ("passed", "failed", "skipped"):
                raise self.bad(
                    f"{where}.phases", "setup/call/teardown: passed, failed or skipped", raw["phases"]
                )
        return TestRecord(
            **{
                **raw,
                "reasons": [
                    self.reason(r, f"{where}.reasons[{i}]") for i, r in enumerate(raw.get("reasons", []))
                ],
            }
        )

    def reason(self, raw: object, where: str) -> Reason:
        if not isinstance(raw, dict):
            raise self.bad(where, "an object", raw)
        try:
            return Reason.from_json(raw)
        except (TypeError, ValueError) as err:
            raise SummaryError(f"{self.path} is not a summary.json: {where}: {err}") from None

    def run_facts(self, data: dict[str, Any]) -> tuple[str, dict[str, str], float | None]:
        """commit, versions and load_before_1m; absent in files older than them."""
        commit, versions, load = data.get("commit", ""), data.get("versions", {}), data.get("load_before_1m")
        if not isinstance(commit, str):
            raise self.bad("commit", "a string", commit)
        if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
            raise self.bad("versions", "an object of strings", versions)
        if load is not None and (isinstance(load, bool) or not isinstance(load, (int, float))):
            raise self.bad("load_before_1m", "a number or null", load)
        return commit, versions, None if load is None else float(load)

    def cell(self, cell: object) -> dict[str, str]:
        if not isinstance(cell, dict):
            raise self.bad("cell", "an object", cell)
        for key in ("minor", "personality", "profile"):
            if not cell.get(key):
                raise self.bad(f"cell.{key}", "a non-empty string", cell.get(key))
        for key, value in cell.items():
            if not isinstance(value, str):
                raise self.bad(f"cell.{key}", "a string", value)
        if not _MINOR.fullmatch(cell["minor"]):
            raise self.bad("cell.minor", 'a Kubernetes minor like "1.37"', cell["minor"])
        return cell


def read_summary(path: Path) -> CellSummary:
    """Checked field by field: a hand-edited or truncated file is one line, not a KeyError
    somewhere in the report."""
    reader = _Reader(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:  # a UnicodeDecodeError is a ValueError
        raise SummaryError(f"{path} is not a summary.json: {err}") from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise SummaryError(f"{path} is not a summary.json: it is nested too deeply to read") from None
    if not isinstance(data, dict):
        raise reader.bad("the document", "an object", type(data).__name__)
    cell, tests, wall = reader.cell(data.get("cell")), data.get("tests"), data.get("wall_seconds", 0.0)
    if not isinstance(tests, list):
        raise reader.bad("tests", "a list", tests)
    if isinstance(wall, bool) or not isinstance(wall, (int, float)):
        raise reader.bad("wall_seconds", "a number", wall)
    records = [reader.record(t, f"tests[{i}]") for i, t in enumerate(tests)]
    return CellSummary(cell, records, float(wall), *reader.run_facts(data))


def write_summary(path: Path, summary: CellSummary) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(redact_obj(summary.to_json()), indent=2))


ReportFile = str | dict[str, Any]  # Markdown/HTML text, or a JSON document


def write_report_files(out: Path, files: Mapping[str, ReportFile]) -> list[Path]:
    """Write a report's files into `out` (made if missing), each redacted on its way: text
    through redact, a JSON document through redact_obj (written indented, newline-ended).
    Each file is replaced whole, so a reader never sees half of one. Returns the paths in
    the order given."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in files.items():
        text = (
            redact(content) if isinstance(content, str) else json.dumps(redact_obj(content), indent=2) + "\n"
        )
        path = out / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
        written.append(path)
    return written


def environment_properties(values: Mapping[str, str]) -> str:
    """Allure's environment.properties: key=value lines, with the separators escaped."""

    def esc(text: str) -> str:
        return re.sub(r"([=:\\])", r"\\\1", text)

    return "".join(f"{esc(k)}={esc(v)}\n" for k, v in sorted(values.items()))


def write_allure_extras(alluredir: Path, environment: Mapping[str, str]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    (alluredir / "environment.properties").write_text(environment_properties(redact_obj(dict(environment))))
    (alluredir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))


def merge_totals(summaries: Iterable[CellSummary]) -> dict[str, int]:
    total = dict.fromkeys(OUTCOMES, 0)
    for s in summaries:
        for k, v in s.totals.items():
            total[k] += v
    return total
