"""Prometheus text parsing and samplers for the scale benchmark."""

from __future__ import annotations

import itertools
import os
import re
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str, only: tuple[str, ...] = ()) -> list[tuple[str, dict[str, str], float]]:
    """Prometheus text format -> (name, labels, value); `only`: keep just these name prefixes
    (a sampler reading two series of a large page)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#") or (only and not line.startswith(only)):
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


Series = list[tuple[float, float]]  # (monotonic time, cumulative value)


def steal_seconds(stat: str = "/proc/stat") -> float:
    """The machine's steal time so far (all CPUs): time a VM's CPUs waited for the host."""
    with open(stat) as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if fields[0] == "cpu" and len(fields) > 8 else 0.0


SampleLog = list[tuple[float, dict[str, float]]]  # (monotonic time, values)


@dataclass
class Sampler:
    """Calls `sample()` on a thread until stopped, every `interval` seconds or as often as
    `pace(samples)` says, and keeps each result with the monotonic time it was taken;
    `latest` is the newest good one."""

    sample: Callable[[], dict[str, float]]
    interval: float
    pace: Callable[[SampleLog], float] | None = None
    samples: SampleLog = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    values = self.sample()
                    self.samples.append((time.monotonic(), values))
                except Exception:  # a missed sample (e.g. a slow scrape) is not a failed run
                    pass
                pause = self.pace(self.samples) if self.pace and self.samples else self.interval
                self._stop.wait(pause)  # stoppable pacing of a sampler, not a test wait

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def latest(self, key: str) -> float | None:
        return self.samples[-1][1].get(key) if self.samples else None

    def series(self, key: str) -> Series:
        return [(t, v[key]) for t, v in self.samples if key in v]


def approach_pace(
    samples: SampleLog, key: str, target: float, coarse: float, fine: float, near: float
) -> float:
    """How long to wait before the next sample of a counter climbing to `target`: `coarse`
    while far from it, then half the time the recent rate says is left, and `fine` once
    `near` or less is left, so the moment it reaches the target is known to about `fine`,
    not to the coarse sampling grid (on a 6 s repetition, 1 s of grid is 15 %)."""
    now = samples[-1][1].get(key)
    if now is None:
        return coarse
    left = target - now
    if left <= near:
        return fine
    if len(samples) < 2 or (before := samples[-2][1].get(key)) is None:
        return coarse
    rate = (now - before) / (samples[-1][0] - samples[-2][0] or coarse)
    return coarse if rate <= 0 else min(coarse, max(fine, left / rate / 2))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def reaching_time(series: Series, target: float) -> float | None:
    """When a cumulative series reached `target`: linear between the last sample below it and
    the first at or above it, so the sampling interval does not round the duration."""
    for (t0, v0), (t1, v1) in itertools.pairwise(series):
        if v1 >= target > v0:
            return t0 + (t1 - t0) * (target - v0) / (v1 - v0)
    return series[0][0] if series and series[0][1] >= target else None


def steady_rate(series: Series, base: float, total: float, low: float = 0.1, high: float = 0.9) -> float:
    """Rate while the cumulative series went from base + low*total to base + high*total."""
    t0, t1 = reaching_time(series, base + low * total), reaching_time(series, base + high * total)
    return (high - low) * total / (t1 - t0) if t0 is not None and t1 is not None and t1 > t0 else 0.0


def value_at(series: Series, t: float) -> float:
    """The cumulative value at time t, linear between samples, flat outside them."""
    if not series:
        return 0.0
    if t <= series[0][0]:
        return series[0][1]
    for (t0, v0), (t1, v1) in itertools.pairwise(series):
        if t0 <= t <= t1:
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
    return series[-1][1]


def throughput_windows(series: Series, start: float, end: float, window: float = 1.0) -> list[float]:
    """Rate per second in consecutive `window`-second windows from `start` to `end` (the last,
    shorter window is dropped unless it is the only one), from a cumulative series sampled
    at any interval, trimmed to the span where the value increased."""
    edges = [start + i * window for i in range(int((end - start) // window) + 1)]
    if len(edges) < 2:
        edges = [start, end]
    values = [value_at(series, t) for t in edges]
    rates = [(b - a) / (t1 - t0) for (t0, a), (t1, b) in itertools.pairwise(zip(edges, values, strict=True))]
    active = [i for i, r in enumerate(rates) if r > 0]
    return rates[active[0] : active[-1] + 1] if active else []


def cv(values: list[float]) -> float:
    """Coefficient of variation in percent."""
    if len(values) < 2 or statistics.mean(values) == 0:
        return 0.0
    return 100 * statistics.stdev(values) / statistics.mean(values)


def histogram_delta(
    before: list[tuple[str, dict[str, str], float]],
    after: list[tuple[str, dict[str, str], float]],
    name: str,
    group: str,
    **match: str,
) -> dict[str, tuple[float, float]]:
    """A histogram's (sum, count) between two scrapes, by the value of label `group`,
    over the samples whose labels include `match`; groups with no new observation are left out."""
    out: dict[str, tuple[float, float]] = {}
    keys = {labels[group] for n, labels, _ in after if n == f"{name}_count" and group in labels}
    for key in sorted(keys):
        sel = {**match, group: key}
        count = (metric_sum(after, f"{name}_count", **sel) or 0.0) - (
            metric_sum(before, f"{name}_count", **sel) or 0.0
        )
        total = (metric_sum(after, f"{name}_sum", **sel) or 0.0) - (
            metric_sum(before, f"{name}_sum", **sel) or 0.0
        )
        if count > 0:
            out[key] = (total, count)
    return out
