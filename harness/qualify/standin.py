"""A stand-in vendor driver: the fake driver's slices and DeviceClasses renamed to a driver
name the suites do not know, installed out of band on kwok nodes, as a vendor's own driver
would be. It is what the external run and `dra-harness qualify` are tested against.

    python -m harness.qualify.standin up --kubeconfig K --driver-name gpu.acme.example \\
        --pool big:2:8 --pool small:1:4 --pool mig:1:2:static
    python -m harness.qualify.standin down --kubeconfig K --driver-name gpu.acme.example

Renaming is textual on the rendered objects: every occurrence of the personality's driver
name (slice `spec.driver`, the classes' CEL `device.driver == ...` and attribute domains)
becomes the new name, so what the cluster sees is self-consistent and nothing in the
suites can recognise the fake driver by name.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fake_driver.apilimits import parse_minor
from fake_driver.deviceclasses import render_device_classes
from fake_driver.fleet import Fleet, fleet_from_dict
from fake_driver.personalities import get_personality
from fake_driver.slices import render_node
from harness.clusters.nodes import NodePool, create_pool
from harness.errors import HarnessError
from harness.kube import ConflictError, Kube, Obj

STANDIN_LABEL = "dra-harness.io/standin-driver"
DEFAULT_PERSONALITY = "nvidia-v0.4"


@dataclass(frozen=True)
class StandinPool:
    """`name:count:gpus[:mig]` on the command line; mig is static or dynamic."""

    name: str
    count: int
    gpus: int
    mig: str | None = None
    profile: str = "h100-80gb-hbm3"

    @classmethod
    def parse(cls, text: str) -> StandinPool:
        parts = text.split(":")
        try:
            if len(parts) not in (3, 4) or (parts[3:] and parts[3] not in ("static", "dynamic")):
                raise ValueError
            return cls(parts[0], int(parts[1]), int(parts[2]), parts[3] if parts[3:] else None)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"pool {text!r}: expected name:count:gpus[:static|dynamic]"
            ) from None


def node_pools(pools: Sequence[StandinPool], driver_name: str) -> list[NodePool]:
    prefix = driver_name.split(".")[1] if "." in driver_name else driver_name
    return [
        NodePool(name=f"{prefix}-{p.name}", count=p.count, labels={STANDIN_LABEL: driver_name}) for p in pools
    ]


def _fleet(pools: Sequence[StandinPool], nodes: Sequence[NodePool], personality: str) -> Fleet:
    raw: list[dict[str, Any]] = []
    for p, n in zip(pools, nodes, strict=True):
        pool: dict[str, Any] = {
            "name": p.name,
            "nodes": n.node_names(),
            "profile": p.profile,
            "gpus": p.gpus,
            "personality": personality,
        }
        if p.mig:
            pool["mig"] = p.mig
        raw.append(pool)
    return fleet_from_dict({"pools": raw})


def renamed(obj: Obj, old: str, new: str) -> Obj:
    """`obj` with every occurrence of the driver name `old` replaced by `new`."""
    out: Obj = json.loads(json.dumps(obj).replace(old, new))
    return out


def device_classes(driver_name: str, personality: str = DEFAULT_PERSONALITY) -> list[Obj]:
    """The personality's classes for the stand-in: the GPU class takes the driver's name, the
    others `<kind>.<driver name>` (mig.gpu.acme.example)."""
    p = get_personality(personality)
    out = []
    for dc in render_device_classes(p, compute_domains=False):
        name = dc["metadata"]["name"]
        dc = renamed(dc, p.driver, driver_name)
        dc["metadata"]["name"] = driver_name if name == p.driver else f"{name.split('.')[0]}.{driver_name}"
        out.append(dc)
    return out


def install(
    kube: Kube, pools: Sequence[StandinPool], driver_name: str, *, personality: str = DEFAULT_PERSONALITY
) -> list[str]:
    """Creates the nodes (kwok), their slices and the classes; returns the node names."""
    p = get_personality(personality)
    major, minor = kube.server_version()
    nodes = node_pools(pools, driver_name)
    fleet = _fleet(pools, nodes, personality)
    names: list[str] = []
    for pool in nodes:
        names += create_pool(kube, pool)
    for name in names:
        uid = kube.get("v1", "Node", name)["metadata"]["uid"]
        for s in render_node(fleet.node(name), parse_minor(f"{major}.{minor}"), node_uid=uid).slices:
            kube.create(renamed(s, p.driver, driver_name))
    for dc in device_classes(driver_name, personality):
        with contextlib.suppress(ConflictError):  # a second `up` adds pools to the same driver
            kube.create(dc)
    return names


def uninstall(kube: Kube, driver_name: str, *, personality: str = DEFAULT_PERSONALITY) -> None:
    """Removes what `install` made for `driver_name`: classes, slices, nodes."""
    for dc in device_classes(driver_name, personality):
        kube.delete(dc["apiVersion"], "DeviceClass", dc["metadata"]["name"])
    api = device_classes(driver_name, personality)[0]["apiVersion"]
    for s in kube.list(api, "ResourceSlice"):
        if s["spec"]["driver"] == driver_name:
            kube.delete(api, "ResourceSlice", s["metadata"]["name"])
    for n in kube.list("v1", "Node", label_selector=f"{STANDIN_LABEL}={driver_name}"):
        kube.delete("v1", "Node", n["metadata"]["name"])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.qualify.standin", description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("up", "down"))
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--driver-name", required=True)
    ap.add_argument("--personality", default=DEFAULT_PERSONALITY)
    ap.add_argument(
        "--pool", action="append", type=StandinPool.parse, default=[], help="name:count:gpus[:mig]"
    )
    args = ap.parse_args(argv)
    kube = Kube.from_kubeconfig(args.kubeconfig)
    try:
        if args.action == "up":
            nodes = install(kube, args.pool, args.driver_name, personality=args.personality)
            print(f"stand-in driver {args.driver_name} on {', '.join(nodes)}")
        else:
            uninstall(kube, args.driver_name, personality=args.personality)
    except HarnessError as err:
        print(f"standin: {err}", file=sys.stderr)
        return 1
    finally:
        kube.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
