"""Prometheus text parsing and samplers for the scale benchmark."""

from __future__ import annotations

import itertools
import os
import re
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            labels = dict(_LABEL.findall(m[2] or ""))
            try:
                out.append((m[1], labels, float(m[3])))
            except ValueError:
                continue
    return out


def metric_sum(samples: list[tuple[str, dict[str, str], float]], name: str, **match: str) -> float | None:
    """Sum of every sample of `name` whose labels include `match`; None if the metric is absent."""
    values = [
        v for n, labels, v in samples if n == name and all(labels.get(k) == x for k, x in match.items())
    ]
    return sum(values) if values else None


def first_metric(
    samples: list[tuple[str, dict[str, str], float]], names: list[str], **match: str
) -> float | None:
    """The first of several names a metric has had across minors."""
    for name in names:
        value = metric_sum(samples, name, **match)
        if value is not None:
            return value
    return None


def process_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Sampler:
    """Calls `sample()` every `interval` seconds on a thread until stopped; keeps the values."""

    sample: Callable[[], float]
    interval: float
    values: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.values.append(self.sample())
                except Exception:  # a missed sample (e.g. a slow scrape) is not a failed run
                    self.values.append(float("nan"))
                self._stop.wait(self.interval)  # stoppable pacing of a sampler, not a test wait

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def throughput_windows(cumulative: list[float]) -> list[float]:
    """Pods/s per sampling window from a cumulative count sampled every second, trimmed to
    the span where scheduling happened (first to last increase)."""
    deltas = [b - a for a, b in itertools.pairwise(cumulative)]
    active = [i for i, d in enumerate(deltas) if d > 0]
    return deltas[active[0] : active[-1] + 1] if active else []


def cv(values: list[float]) -> float:
    """Coefficient of variation in percent."""
    if len(values) < 2 or statistics.mean(values) == 0:
        return 0.0
    return 100 * statistics.stdev(values) / statistics.mean(values)
