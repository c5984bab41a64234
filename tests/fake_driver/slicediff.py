"""Field-by-field differences between the ResourceSlices a real driver published and the ones a
personality renders for the same node: every leaf that differs, by path, with both values.

A slice is compared by its position in the pool (the server's order by name: the index prefix
of the name), devices by name, counter sets by name, a device's counter consumptions by counter
set, an attribute as (type, value): a type change shows as ``<attribute>.type``. Not compared,
because the API server assigns them: metadata.name's random suffix, uid, resourceVersion,
creationTimestamp, generation, managedFields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
Path = tuple[str, ...]
ABSENT = "<absent>"


@dataclass(frozen=True)
class Difference:
    path: Path
    real: Any
    fake: Any

    def __str__(self) -> str:
        return f"{'.'.join(self.path)}: real {self.real!r}, fake {self.fake!r}"


def comparable(slice_: Mapping[str, Any]) -> Obj:
    """The fields of one slice that a driver decides, keyed for a field-by-field comparison."""
    meta, spec = slice_.get("metadata", {}), slice_.get("spec", {})
    out_spec: Obj = {k: v for k, v in spec.items() if k not in ("devices", "sharedCounters")}
    if "sharedCounters" in spec:
        out_spec["sharedCounters"] = {cs["name"]: cs["counters"] for cs in spec["sharedCounters"]}
    if "devices" in spec:
        out_spec["devices"] = {d["name"]: _device(d) for d in spec["devices"]}
    return {
        "metadata": {
            "generateName": meta.get("generateName", ABSENT),
            "labels": meta.get("labels") or {},
            "annotations": meta.get("annotations") or {},
            "ownerReferences": meta.get("ownerReferences") or [],
        },
        "spec": out_spec,
    }


def _device(d: Mapping[str, Any]) -> Obj:
    out: Obj = {k: v for k, v in d.items() if k not in ("name", "attributes", "consumesCounters")}
    out["attributes"] = {n: _attribute(v) for n, v in d.get("attributes", {}).items()}
    if "consumesCounters" in d:
        out["consumesCounters"] = {c["counterSet"]: c["counters"] for c in d["consumesCounters"]}
    return out


def _attribute(value: Mapping[str, Any]) -> Obj:
    ((kind, v),) = value.items()
    return {"type": kind, "value": v}


def slice_differences(
    real: Sequence[Mapping[str, Any]], fake: Sequence[Mapping[str, Any]]
) -> list[Difference]:
    """Every differing leaf of the two pools' slices, in path order."""
    out: list[Difference] = []
    _diff(
        (),
        {f"slice{k}": comparable(s) for k, s in enumerate(real)},
        {f"slice{k}": comparable(s) for k, s in enumerate(fake)},
        out,
    )
    return out


def _diff(path: Path, real: Any, fake: Any, out: list[Difference]) -> None:
    if isinstance(real, Mapping) and isinstance(fake, Mapping):
        for key in sorted(set(real) | set(fake)):
            _diff((*path, key), real.get(key, ABSENT), fake.get(key, ABSENT), out)
    elif type(real) is not type(fake) or real != fake:
        out.append(Difference(path, real, fake))


def matches(path: Path, pattern: Path) -> bool:
    """``pattern`` is a prefix of ``path``; ``*`` stands for any one segment."""
    return len(path) >= len(pattern) and all(p in ("*", s) for s, p in zip(path, pattern, strict=False))
