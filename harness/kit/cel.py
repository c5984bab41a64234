"""Evaluate DRA CEL selectors against published devices, offline (cel-python).

The scheduler evaluates `device.driver`, `device.attributes[<domain>].<name>` and
`device.capacity[<domain>].<name>` for every device. This module builds the same view from a
ResourceSlice device and evaluates an expression with the Kubernetes CEL extensions the
selectors use most (`quantity()`, `semver()`, `compareTo`, `isGreaterThan`, ...). An
expression it cannot evaluate yields `Outcome.UNKNOWN` with the reason — never a guess.

Evaluation is bounded as kube-scheduler bounds it: a cost limit per evaluation (one unit per
AST node evaluated, a model of cel-go's runtime cost) and a time limit; an expression over
either is `Outcome.OVER_LIMIT`, and is not evaluated again in this process (a selector built to
be slow costs its limit once per scan, not once per device).
"""

from __future__ import annotations

import enum
import functools
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import Activation, CELEvalError, Evaluator

from harness.kit.kube import Obj, parse_quantity


class Outcome(enum.Enum):
    MATCH = "match"
    NO_MATCH = "no-match"
    RUNTIME_ERROR = "runtime-error"  # e.g. an attribute the device does not have
    UNKNOWN = "unknown"  # this evaluator cannot tell (unsupported function or syntax)
    OVER_LIMIT = "over-limit"  # not evaluated: over the cost or time limit


# The scheduler's runtime cost limit per selector evaluation (k8s.io/api@v0.37.2
# resource/v1/types.go CELSelectorExpressionMaxCost, applied by k8s.io/dynamic-resource-allocation
# @v0.37.2 cel/compile.go as cel.CostLimit); that file reckons it "roughly 0.1 second" in Go.
COST_LIMIT = 1_000_000
# cel-python walks the tree in Python, far slower than cel-go: the time limit is what bounds it.
TIME_LIMIT = 1.0  # seconds per evaluation
_OVER: dict[str, str] = {}  # expression -> which limit it went over (this process)


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


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def field_ref(field: str, qualified: str, driver: str) -> str | None:
    """CEL reading a published attribute or capacity (`field`: "attributes" or "capacity") of
    `driver`'s device: device.attributes['<domain>'].<name>; None where the name is no CEL
    identifier (a selector would have to index it, which these tests do not)."""
    domain, name = _split(qualified, driver)
    return f"device.{field}['{domain}'].{name}" if _IDENTIFIER.match(name) else None


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


class _OverLimit(Exception):
    pass


class _Budget:
    """What one evaluation may still spend; once over, every further step raises again (celpy
    turns some exceptions into CEL errors and goes on)."""

    def __init__(self, cost: int, seconds: float) -> None:
        self.left, self.deadline, self.over = cost, time.monotonic() + seconds, ""

    def charge(self) -> None:
        if not self.over:
            self.left -= 1
            if self.left < 0:
                self.over = f"over the cost limit: more than {COST_LIMIT:,} steps"
            elif self.left % 256 == 0 and time.monotonic() > self.deadline:
                self.over = f"over the cost limit: more than {TIME_LIMIT:g} s"
        if self.over:
            raise _OverLimit(self.over)


class _BoundedEvaluator(Evaluator):
    """celpy's tree-walking evaluator, charged one unit per node, macros included."""

    def __init__(self, ast: lark.Tree[Any], activation: Activation, budget: _Budget) -> None:
        super().__init__(ast, activation=activation)
        self.budget = budget

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:  # lark's one entry for every node visited
        self.budget.charge()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _BoundedEvaluator(ast, self.activation, self.budget)


@functools.lru_cache(maxsize=256)
def _program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression), functions=FUNCTIONS)


def evaluate(expression: str, driver: str, device: Obj) -> Result:
    if expression in _OVER:
        return Result(Outcome.OVER_LIMIT, _OVER[expression])
    try:
        program = _program(expression)
    except Exception as err:  # celpy's parser raises several types; all mean "cannot evaluate"
        return Result(Outcome.UNKNOWN, f"cannot compile: {err}")
    budget = _Budget(COST_LIMIT, TIME_LIMIT)
    value: Any = None
    try:
        evaluator = _BoundedEvaluator(program.ast, program.new_activation(), budget)
        value = evaluator.evaluate(device_activation(driver, device))
    except CELEvalError as err:
        value = err  # judged below, as a returned one is
    except _OverLimit:
        pass
    except Exception as err:  # an extension this evaluator lacks, a type it does not model
        return Result(Outcome.UNKNOWN, f"{type(err).__name__}: {err}")
    if budget.over:
        _OVER[expression] = budget.over
        return Result(Outcome.OVER_LIMIT, budget.over)
    if isinstance(value, CELEvalError):
        return Result(Outcome.RUNTIME_ERROR, str(value.args[0]) if value.args else str(value))
    if not isinstance(value, bool | celtypes.BoolType):
        return Result(Outcome.UNKNOWN, f"expression returned {type(value).__name__}, not bool")
    return Result(Outcome.MATCH if value else Outcome.NO_MATCH)


def over_limit(expressions: Iterable[str]) -> str:
    """Why one of these expressions was not evaluated (over a limit), or ""."""
    return next((_OVER[e] for e in expressions if e in _OVER), "")


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
