"""Pure functions turning a cell's summary.json records into PASS / FLAKY / FAIL / WARN / SKIP per
check (the checks are in catalog.py, what a skip reason means in gates.py).

How a check's status is decided from its tests' outcomes in one cell:
    no test of the check ran                 SKIP  (not part of this run)
    any test failed or errored               FAIL  (remediation: the check's on_fail)
    tests skipped for a reason that matters  the reason's status (FAIL or WARN), or WARN
                                             when some of the check's tests passed anyway
    tests skipped for a reason that doesn't  SKIP  (not applicable to this cell)
    (a reason matters by its fields, see reason_meaning; never by its wording)
    a test passed only on a rerun            FLAKY (the first attempt's failure in the detail)
    otherwise                                PASS
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.core.requirements import Kind
from harness.readiness.catalog import CHECKS
from harness.readiness.gates import reason_meaning
from harness.readiness.status import Check, CheckResult, Status
from harness.reports.summary import TestRecord


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


DETAIL_CHARS = 300


def clip(text: str, limit: int = DETAIL_CHARS) -> str:
    """One line, at most `limit` characters: a failure message, not its whole pformat dump."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def skip_meaning(check: Check, record: TestRecord) -> tuple[Status, str]:
    """The worst of a skipped test's reasons; a skip without reasons (pytest's own, or a
    summary.json written before reasons were recorded) is SKIP."""
    meanings = [reason_meaning(check, r) for r in record.reasons]
    if not meanings:
        return Status.SKIP, ""
    worst = max(status for status, _ in meanings)
    return worst, " ".join(_unique(fix for status, fix in meanings if status == worst))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _not_run(skipped: Sequence[TestRecord]) -> str:
    """Why nothing ran: a part this machine lacks is "not built here", never "not applicable"."""
    unbuilt = [r for r in skipped if r.reasons and all(x.kind is Kind.NOT_BUILT for x in r.reasons)]
    rest = [r for r in skipped if r not in unbuilt]
    parts = [f"not applicable: {'; '.join(_unique(r.message for r in rest))}"] if rest else []
    parts += [f"not built here: {'; '.join(_unique(r.message for r in unbuilt))}"] if unbuilt else []
    return "; ".join(parts)


def evaluate(check: Check, records: Sequence[TestRecord]) -> CheckResult:
    mine = [r for r in records if check.covers(r.nodeid)]
    counts = {o: sum(1 for r in mine if r.outcome == o) for o in ("passed", "failed", "skipped", "errors")}

    def result(status: Status, detail: str, remediation: str = "") -> CheckResult:
        return CheckResult(check.id, check.title, status, detail, remediation, counts)

    if not mine:
        return result(Status.SKIP, "no test of this check ran in this cell")
    broken = [r for r in mine if r.outcome in ("failed", "errors")]
    if broken:
        first = broken[0]
        detail = f"{len(broken)} of {len(mine)} failed; {_short(first.nodeid)}: {clip(first.message)}"
        return result(Status.FAIL, detail.strip().rstrip(":"), check.on_fail)
    flaky = [r for r in mine if r.flaky]
    if flaky:  # never a plain pass: the first attempt failed
        first = flaky[0]
        detail = f"{len(flaky)} of {len(mine)} passed only on a rerun (flaky); "
        detail += f"{_short(first.nodeid)}: {clip(first.rerun)}"
        return result(Status.FLAKY, detail, "find why the first attempt failed: it will fail again")
    skipped = [r for r in mine if r.outcome == "skipped"]
    meanings = [(r, *skip_meaning(check, r)) for r in skipped]
    mattering = [(r, s, fix) for r, s, fix in meanings if s >= Status.WARN]
    passed = counts["passed"]
    if mattering:
        worst = max(s for _, s, _ in mattering)
        status = Status.WARN if passed else worst
        reasons = "; ".join(_unique(r.message for r, _, _ in mattering))
        prefix = f"{passed} of {len(mine)} passed, {len(mattering)} skipped: " if passed else "skipped: "
        return result(status, prefix + reasons, " ".join(_unique(fix for _, _, fix in mattering)))
    if not passed:
        return result(Status.SKIP, _not_run(skipped))
    extra = f" ({len(skipped)} not applicable here)" if skipped else ""
    return result(Status.PASS, f"{passed} of {len(mine)} passed{extra}")


def evaluate_cell(records: Sequence[TestRecord], checks: Sequence[Check] = CHECKS) -> list[CheckResult]:
    return [evaluate(c, records) for c in checks]


def fallback_checks(records: Iterable[TestRecord], checks: Sequence[Check] = CHECKS) -> list[Check]:
    """One "other tests" check per suite area with tests no check in `checks` covers, so a new
    suite shows up in the report before CHECKS names it."""
    areas = sorted({r.area for r in records if r.nodeid in set(uncovered([r], checks))})
    return [
        Check(
            f"other-{area}",
            f"Other tests in suites/{area} (no readiness check describes them yet)",
            area,
            (f"suites/{area}/*",),
            "read the failing test's message; then give these tests a check in harness/readiness/catalog.py",
            exclude=tuple(p for c in checks for p in c.tests if p.startswith(f"suites/{area}/")),
        )
        for area in areas
    ]


def uncovered(records: Iterable[TestRecord], checks: Sequence[Check] = CHECKS) -> list[str]:
    """Suite tests no check looks at (the report lists them, so CHECKS stays complete)."""
    return [
        r.nodeid
        for r in records
        if r.nodeid.startswith("suites/") and not any(c.covers(r.nodeid) for c in checks)
    ]
