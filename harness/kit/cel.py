"""Evaluate DRA CEL selectors against published devices, offline (cel-python).

The scheduler evaluates `device.driver`, `device.attributes[<domain>].<name>` and
`device.capacity[<domain>].<name>` for every device. This module builds the same view from a
ResourceSlice device and evaluates an expression with the Kubernetes CEL extensions the
selectors use most (`quantity()`, `semver()`, `compareTo`, `isGreaterThan`, ...). An
expression it cannot evaluate yields `Outcome.UNKNOWN` with the reason — never a guess.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from harness.kit.kube import Obj, parse_quantity


class Outcome(enum.Enum):
    MATCH = "match"
    NO_MATCH = "no-match"
    RUNTIME_ERROR = "runtime-error"  # e.g. an attribute the device does not have
    UNKNOWN = "unknown"  # this evaluator cannot tell (unsupported function or syntax)


@dataclass(frozen=True)
class Result:
    outcome: Outcome
    detail: str = ""


class _Quantity(celtypes.IntType):
    """Quantities compare as integers of their base unit (milli-units are kept exact)."""


_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


@dataclass(frozen=True, order=True)
class _Semver:
    major: int
    minor: int
    patch: int
    # A release sorts after any of its pre-releases.
    release: bool

    @classmethod
    def parse(cls, text: str) -> _Semver:
        m = _SEMVER.match(text)
        if not m:
            raise ValueError(f"not a semantic version: {text!r}")
        return cls(int(m[1]), int(m[2]), int(m[3]), m[4] is None)


def _quantity(value: Any) -> _Quantity:
    amount = parse_quantity(str(value))
    return _Quantity(int(amount * 1000) if amount != amount.to_integral_value() else int(amount))


def _semver(value: Any) -> Any:
    return _Semver.parse(str(value))


def _compare(a: Any, b: Any) -> celtypes.IntType:
    return celtypes.IntType((a > b) - (a < b))


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "semver": _semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: celtypes.BoolType(a > b),
    "isLessThan": lambda a, b: celtypes.BoolType(a < b),
    "major": lambda v: celtypes.IntType(v.major),
    "minor": lambda v: celtypes.IntType(v.minor),
    "patch": lambda v: celtypes.IntType(v.patch),
}


def _split(qualified: str, driver: str) -> tuple[str, str]:
    domain, _, name = qualified.rpartition("/")
    return (domain or driver), name


def _attribute(value: Obj) -> Any:
    if "version" in value:
        return _Semver.parse(value["version"])
    if "bool" in value:
        return celtypes.BoolType(value["bool"])
    if "int" in value:
        return celtypes.IntType(value["int"])
    if "string" in value:
        return celtypes.StringType(value["string"])
    raise ValueError(f"attribute of unknown type: {sorted(value)}")


def device_activation(driver: str, device: Obj) -> dict[str, Any]:
    """The `device` variable the scheduler binds for one ResourceSlice device."""
    attributes: dict[str, dict[str, Any]] = {}
    for qualified, value in (device.get("attributes") or {}).items():
        domain, name = _split(qualified, driver)
        attributes.setdefault(domain, {})[name] = _attribute(value)
    capacity: dict[str, dict[str, Any]] = {}
    for qualified, value in (device.get("capacity") or {}).items():
        domain, name = _split(qualified, driver)
        capacity.setdefault(domain, {})[name] = _quantity(value["value"])
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("attributes"): _nested(attributes),
                celtypes.StringType("capacity"): _nested(capacity),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                    bool(device.get("allowMultipleAllocations"))
                ),
            }
        )
    }


def _nested(data: dict[str, dict[str, Any]]) -> celtypes.MapType:
    return celtypes.MapType(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(k): v for k, v in values.items()}
            )
            for domain, values in data.items()
        }
    )


def evaluate(expression: str, driver: str, device: Obj) -> Result:
    env = celpy.Environment()
    try:
        program = env.program(env.compile(expression), functions=FUNCTIONS)
    except Exception as err:  # celpy's parser raises several types; all mean "cannot evaluate"
        return Result(Outcome.UNKNOWN, f"cannot compile: {err}")
    try:
        value = program.evaluate(device_activation(driver, device))
    except CELEvalError as err:
        return Result(Outcome.RUNTIME_ERROR, str(err.args[0]) if err.args else str(err))
    except Exception as err:  # an extension this evaluator lacks, a type it does not model
        return Result(Outcome.UNKNOWN, f"{type(err).__name__}: {err}")
    if isinstance(value, CELEvalError):
        return Result(Outcome.RUNTIME_ERROR, str(value.args[0]) if value.args else str(value))
    if not isinstance(value, bool | celtypes.BoolType):
        return Result(Outcome.UNKNOWN, f"expression returned {type(value).__name__}, not bool")
    return Result(Outcome.MATCH if value else Outcome.NO_MATCH)


def published_devices(slices: Iterable[Obj]) -> list[tuple[str, str, Obj]]:
    """(driver, node, device) for every device in these ResourceSlices."""
    return [
        (s["spec"]["driver"], s["spec"].get("nodeName") or "", d)
        for s in slices
        for d in s["spec"].get("devices") or []
    ]


def count_matches(expressions: Iterable[str], devices: Iterable[tuple[str, str, Obj]]) -> dict[Outcome, int]:
    """How many devices each outcome covers when all `expressions` must hold (a class's
    selectors, or a class plus a request's selectors)."""
    counts = dict.fromkeys(Outcome, 0)
    exprs = list(expressions)
    for driver, _, device in devices:
        outcome = Outcome.MATCH
        for expr in exprs:
            result = evaluate(expr, driver, device).outcome
            if result is not Outcome.MATCH:
                outcome = result
                break
        counts[outcome] += 1
    return counts
