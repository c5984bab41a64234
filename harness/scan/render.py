"""The scan as Markdown, for a PR comment: the verdict, the pools, what bridging offers, the
DRA gates, every check with its status and why, and the findings with their fixes (text and
JSON: harness.scan.cluster), and the tainted devices by pool (harness.scan.taints)."""

from __future__ import annotations

from harness.core.redaction import redact
from harness.kit.checks.detectors import Severity
from harness.scan.checks import gates_statement, not_checked, summary_for
from harness.scan.cluster import VERDICTS, ScanResult, exit_code
from harness.scan.taints import view_markdown


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: ScanResult) -> str:
    state = result.state
    lines = [
        f"### dra-harness scan: {VERDICTS[exit_code(result.findings)]}",
        "",
        f"Kubernetes {state.git_version}, {len(state.nodes)} nodes, {len(state.slices)} ResourceSlices. "
        + ", ".join(f"{n} {s}" for s, n in summary_for(result.checks).items())
        + ".",
        "",
        *(f"- {line.strip()}" for line in [*result.pools.lines(), *result.bridging, gates_statement(state)]),
        "",
        "| status | check | why |",
        "|---|---|---|",
        *(f"| {r.status.value} | {r.check} | {_cell(r.why)} |" for r in result.checks),
    ]
    shown = [f for f in result.findings if f.severity > Severity.INFO]
    if shown:
        lines += ["", "| severity | check | subject | finding | fix |", "|---|---|---|---|---|"]
        for f in shown:
            cells = [f.severity.name, f.check, *(_cell(x) for x in (f.subject, f.message, f.remediation))]
            lines.append("| " + " | ".join(cells) + " |")
    if result.taints:
        lines += ["", *view_markdown(result.taints)]
    lines += ["", *(f"_{line}_" for line in not_checked(state))]
    return redact("\n".join(lines) + "\n")
