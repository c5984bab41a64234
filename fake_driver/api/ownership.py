"""Which objects on a cluster are ours: the one owner label of dra-harness and its fake driver.

A user's cluster (`--cluster-provider existing`, `python -m fake_driver` against any cluster)
may already hold objects with the names our driver uses: NVIDIA's real `gpu.nvidia.com` and
`mig.nvidia.com` DeviceClasses, its `gpu.nvidia.com` ResourceSlices. So everything the harness
or the fake driver creates carries ``OWNER_LABEL=OWNER_VALUE`` (and ``RUN_LABEL=<run id>`` when
the run has one, `$DRA_HARNESS_RUN_ID`, set by `dra-harness run`); an install refuses to take
over an object of the same name without the label, and every teardown deletes only labelled
objects. The label is the one kind node containers already carry (harness.clusters.kind.config).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from typing import Any

from fake_driver.core.errors import ForeignObjectError

Obj = dict[str, Any]

OWNER_LABEL = "dra-harness.io/managed-by"
OWNER_VALUE = "dra-harness"
OWNED_SELECTOR = f"{OWNER_LABEL}={OWNER_VALUE}"
RUN_LABEL = "dra-harness.io/run"
RUN_ENV = "DRA_HARNESS_RUN_ID"


def owner_labels(run_id: str | None = None) -> dict[str, str]:
    """The labels every object we create carries; the run's id when there is one."""
    run = run_id if run_id is not None else os.environ.get(RUN_ENV, "")
    return {OWNER_LABEL: OWNER_VALUE, **({RUN_LABEL: run} if run else {})}


def labelled(obj: Obj, run_id: str | None = None) -> Obj:
    """A copy of `obj` whose metadata.labels carry the owner labels."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **owner_labels(run_id)}
    return out


def is_owned(obj: Mapping[str, Any] | None) -> bool:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return bool(labels.get(OWNER_LABEL) == OWNER_VALUE)


def refusal(kind: str, name: str) -> str:
    """The one line of an install that would take over an object it did not create."""
    return (
        f"refusing to install: {kind} {name} exists and was not created by dra-harness "
        f"(no label {OWNED_SELECTOR}); nothing was changed"
    )


def check_not_foreign(existing: Iterable[tuple[str, str, Obj | None]]) -> None:
    """(kind, name, the object as it is now or None): raises on the first one not ours."""
    for kind, name, obj in existing:
        if obj is not None and not is_owned(obj):
            raise ForeignObjectError(refusal(kind, name))
