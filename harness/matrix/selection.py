"""Which cells a matrix run covers: every runnable cell, or those a filter names (ids or
fnmatch patterns), checked against versions.toml and the driver personalities."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

from fake_driver.facts.personalities import PERSONALITIES
from harness.core.cells import Cell, MatrixError
from harness.core.drivers import driver_ref, is_driver_ref, load_drivers
from harness.core.errors import HarnessError
from harness.core.versions import Matrix


def all_cells(matrix: Matrix, personalities: Iterable[str] = PERSONALITIES) -> list[Cell]:
    """Every runnable cell: minors that can be built here x personalities x gate profiles."""
    names = list(personalities)
    return sorted(
        (
            Cell(m.name, p, prof)
            for m in matrix.minors.values()
            if not m.unavailable
            for p in names
            for prof in m.profiles
        ),
        key=lambda c: (-c.number[1], c.personality, c.profile),
    )


def _real_driver_cells(matrix: Matrix) -> list[Cell]:
    """Every runnable minor x real driver version (versions.toml [drivers]) x gate profile."""
    drivers = load_drivers()
    return [
        Cell(m.name, f"{name}@{version}", prof)
        for m in matrix.minors.values()
        if not m.unavailable
        for name, spec in drivers.items()
        for version in spec.versions
        for prof in m.profiles
    ]


def _valid_summary(matrix: Matrix, personalities: Sequence[str]) -> str:
    profiles = sorted({p for m in matrix.minors.values() for p in m.profiles})
    return (
        f"valid: <minor>/<personality>/<profile> with minor {'|'.join(matrix.minors)}, "
        f"personality {'|'.join(personalities)} or a real driver NAME@VERSION of versions.toml [drivers], "
        f"profile {'|'.join(profiles)} (wildcards * allowed)"
    )


def cells_from(
    matrix: Matrix, personalities: Iterable[str] = PERSONALITIES, filters: Sequence[str] | None = None
) -> list[Cell]:
    """The cells selected by `filters` (ids or fnmatch patterns, comma-separated allowed);
    versions.toml's [matrix] default_cells when None, every runnable cell for "all".
    One-line MatrixError otherwise."""
    names = list(personalities)
    valid = all_cells(matrix, names)
    wanted: list[str] = []
    for f in filters if filters is not None else matrix.default_cells:
        wanted.extend(x.strip() for x in f.split(",") if x.strip())
    if not wanted:
        raise MatrixError(f"no cells given; {_valid_summary(matrix, names)}")
    chosen: list[Cell] = []
    for pattern in wanted:
        if pattern == "all":
            hits = valid
        elif any(ch in pattern for ch in "*?["):
            # Real drivers only where the pattern names one (example@*): `*` means personalities.
            pool = _real_driver_cells(matrix) if "@" in pattern else valid
            hits = [c for c in pool if fnmatch.fnmatchcase(c.id, pattern)]
            if not hits:
                raise MatrixError(
                    f"cell pattern {pattern!r} matches no cell; {_valid_summary(matrix, names)}"
                )
        else:
            cell = Cell.parse(pattern)
            why = _unknown_part(matrix, names, cell)
            if why:
                raise MatrixError(f"unknown cell {pattern!r}: {why}; {_valid_summary(matrix, names)}")
            hits = [cell]
        chosen.extend(c for c in hits if c not in chosen)
    return chosen


def _unknown_part(matrix: Matrix, personalities: Sequence[str], cell: Cell) -> str:
    minor = matrix.minors.get(cell.minor)
    if minor is None:
        return f"no Kubernetes minor {cell.minor!r}"
    if minor.unavailable:
        return f"Kubernetes {cell.minor} is unavailable here ({minor.unavailable})"
    if is_driver_ref(cell.personality):
        try:
            driver_ref(cell.personality)
        except HarnessError as err:
            return str(err)
    elif cell.personality not in personalities:
        return f"no driver personality {cell.personality!r}"
    if cell.profile not in minor.profiles:
        return f"no gate profile {cell.profile!r} for {cell.minor}"
    return ""
