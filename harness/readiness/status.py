"""What a readiness check is (Check), the statuses it can have and its result in one cell."""

from __future__ import annotations

import enum
import fnmatch
from dataclasses import dataclass, field

from harness.reports.verdicts import Word


class Status(enum.IntEnum):
    """Ordered by how much attention it needs; said in the shared words
    (harness.reports.verdicts), so a check decided by reruns is FLAKY as in qualify."""

    PASS = 0
    SKIP = 1
    WARN = 2
    FLAKY = 3
    FAIL = 4

    def __str__(self) -> str:
        return str(self.word)

    @property
    def word(self) -> Word:
        return Word[self.name]


# The readiness report's words, in its legend's order.
STATUS_WORDS = (Word.PASS, Word.FLAKY, Word.FAIL, Word.WARN, Word.SKIP)


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    area: str
    tests: tuple[str, ...]  # fnmatch patterns over pytest node ids
    on_fail: str
    bridged: bool = False  # without the bridge, its users' pods stay Pending: a missing bridge is FAIL
    exclude: tuple[str, ...] = ()  # patterns another check owns

    def covers(self, nodeid: str) -> bool:
        def hit(patterns: tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(nodeid, p) for p in patterns)

        return hit(self.tests) and not hit(self.exclude)


@dataclass(frozen=True)
class CheckResult:
    check: str
    title: str
    status: Status
    detail: str
    remediation: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return any(self.counts.values())

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.check,
            "title": self.title,
            "status": str(self.status),
            "detail": self.detail,
            "remediation": self.remediation,
            "counts": self.counts,
        }
