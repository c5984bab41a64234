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
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fake_driver.api.apilimits import parse_minor
from fake_driver.api.kube import as_rest
from fake_driver.api.ownership import OWNED_SELECTOR, check_not_foreign, is_owned
from fake_driver.command.cliargs import OneLineParser, nonempty
from fake_driver.core.errors import FakeDriverError
from fake_driver.facts.personalities import get_personality
from fake_driver.fleetspec.fleet import Fleet, fleet_from_dict
from fake_driver.rendering.deviceclasses import render_device_classes
from fake_driver.rendering.slices import render_node
from harness.clusters.host.processes import one_line_errors
from harness.clusters.nodes import KwokPoolSpec, create_pool
from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.kube import API_ERRORS, Kube, Obj

STANDIN_LABEL = "dra-harness.io/standin-driver"
STANDIN_PERSONALITY = "nvidia-v0.4"


@dataclass(frozen=True)
class StandinPoolSpec:
    """`name:count:gpus[:mig]` on the command line; mig is static or dynamic."""

    name: str
    count: int
    gpus: int
    mig: str | None = None
    profile: str = "h100-80gb-hbm3"

    @classmethod
    def parse(cls, text: str) -> StandinPoolSpec:
        parts = text.split(":")
        try:
            if len(parts) not in (3, 4) or (parts[3:] and parts[3] not in ("static", "dynamic")):
                raise ValueError
            pool = cls(parts[0], int(parts[1]), int(parts[2]), parts[3] if parts[3:] else None)
            if pool.count < 1 or pool.gpus < 1:
                raise ValueError
            return pool
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"pool {text!r}: expected name:count:gpus[:static|dynamic]"
            ) from None


def node_pools(pools: Sequence[StandinPoolSpec], driver_name: str) -> list[KwokPoolSpec]:
    prefix = driver_name.split(".")[1] if "." in driver_name else driver_name
    return [
        KwokPoolSpec(name=f"{prefix}-{p.name}", count=p.count, labels={STANDIN_LABEL: driver_name})
        for p in pools
    ]


def _fleet(pools: Sequence[StandinPoolSpec], nodes: Sequence[KwokPoolSpec], personality: str) -> Fleet:
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


def device_classes(driver_name: str, personality: str = STANDIN_PERSONALITY) -> list[Obj]:
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
    kube: Kube, pools: Sequence[StandinPoolSpec], driver_name: str, *, personality: str = STANDIN_PERSONALITY
) -> list[str]:
    """Creates the nodes (kwok), their slices and the classes; returns the node names. Checks
    first, writing nothing on a refusal: a node or class of these names that we did not
    create (no owner label) is someone else's; an existing stand-in node means `down` first."""
    p = get_personality(personality)
    nodes = node_pools(pools, driver_name)
    fleet = _fleet(pools, nodes, personality)  # a bad pool is refused before the cluster is asked
    classes = device_classes(driver_name, personality)
    rest = as_rest(kube.api_client)
    names = [n for pool in nodes for n in pool.node_names()]
    current = {n: rest.get(f"/api/v1/nodes/{n}") for n in names}
    check_not_foreign(("Node", n, obj) for n, obj in current.items())
    present = {dc["metadata"]["name"]: rest.get(_class_path(dc)) for dc in classes}
    check_not_foreign(("DeviceClass", n, obj) for n, obj in present.items())
    up = [n for n, obj in current.items() if obj is not None]
    if up:
        raise HarnessError(f"node {up[0]} of a stand-in pool is up already; run `down` first")
    major, minor = kube.server_version()
    for pool in nodes:
        create_pool(kube, pool)
    for name in names:
        uid = kube.get(*kinds.NODE, name)["metadata"]["uid"]
        for s in render_node(fleet.node(name), parse_minor(f"{major}.{minor}"), node_uid=uid).slices:
            kube.create(renamed(s, p.driver, driver_name))
    for dc in classes:
        if present[dc["metadata"]["name"]] is None:  # a second `up` adds pools to the same driver
            kube.create(dc)
    return names


def _class_path(dc: Obj) -> str:
    return f"/apis/{dc['apiVersion']}/deviceclasses/{dc['metadata']['name']}"


def uninstall(kube: Kube, driver_name: str, *, personality: str = STANDIN_PERSONALITY) -> list[str]:
    """Removes what `install` made for `driver_name` (classes, slices, nodes), and only that:
    objects without the owner label stay, whatever their name or driver. Returns what went."""
    rest = as_rest(kube.api_client)
    classes = device_classes(driver_name, personality)
    gone: list[str] = []
    for dc in classes:
        if is_owned(rest.get(_class_path(dc))):
            rest.delete(_class_path(dc))
            gone.append(f"DeviceClass {dc['metadata']['name']}")
    slices = f"/apis/{classes[0]['apiVersion']}/resourceslices"
    mine = {"fieldSelector": f"spec.driver={driver_name}", "labelSelector": OWNED_SELECTOR}
    for s in rest.list(slices, mine):
        rest.delete(f"{slices}/{s['metadata']['name']}")
        gone.append(f"ResourceSlice {s['metadata']['name']}")
    for n in rest.list("/api/v1/nodes", {"labelSelector": f"{STANDIN_LABEL}={driver_name},{OWNED_SELECTOR}"}):
        rest.delete(f"/api/v1/nodes/{n['metadata']['name']}")
        gone.append(f"Node {n['metadata']['name']}")
    return gone


def main(argv: Sequence[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m harness.qualify.standin", description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("up", "down"))
    ap.add_argument("--kubeconfig", required=True, type=nonempty)
    ap.add_argument("--driver-name", required=True, type=nonempty)
    ap.add_argument("--personality", default=STANDIN_PERSONALITY)
    ap.add_argument(
        "--pool", action="append", type=StandinPoolSpec.parse, default=[], help="name:count:gpus[:mig]"
    )
    args = ap.parse_args(argv)
    if args.action == "up" and not args.pool:
        ap.error("up needs at least one --pool name:count:gpus[:static|dynamic]")
    # The CLI's error path: one redacted line and exit 1, an interrupt 128+N, no traceback.
    return one_line_errors(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    try:
        # An unknown personality or a bad pool: refused before the cluster is asked.
        device_classes(args.driver_name, args.personality)
        if args.action == "up":
            _fleet(args.pool, node_pools(args.pool, args.driver_name), args.personality)
        kube = Kube.from_kubeconfig(args.kubeconfig)
        try:
            if args.action == "up":
                nodes = install(kube, args.pool, args.driver_name, personality=args.personality)
                print(f"stand-in driver {args.driver_name} on {', '.join(nodes)}")
            else:
                gone = uninstall(kube, args.driver_name, personality=args.personality)
                print(f"stand-in driver {args.driver_name}: removed {len(gone)} objects")
        except API_ERRORS as err:
            raise kube.failure(err) from None
        finally:
            kube.close()
    except FakeDriverError as err:  # a bad pool, personality or kubeconfig; a refusal; 401
        raise HarnessError(str(err)) from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
