"""Command line: ``python -m fake_driver <command> ...``. Errors: one line on stderr; exit 1 when
the cluster or its kubeconfig cannot be used (unreachable, silent, refusing), else 2."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, TypeAlias

import yaml

from fake_driver.api import apilimits
from fake_driver.api.kube import server_minor
from fake_driver.command.cliargs import (
    OneLineParser,
    known_minor,
    node_name,
    node_names,
    nonempty_csv,
    nonnegative_int,
    positive_float,
)
from fake_driver.core.errors import FakeDriverError, cli_main
from fake_driver.core.stopsignal import StopSignal
from fake_driver.facts.personalities import DEFAULT_XID, HEALTH_EVENTS, PERSONALITIES, get_personality
from fake_driver.facts.profiles import PROFILES, get_profile
from fake_driver.fleetspec.fleet import Fleet, load_fleet
from fake_driver.publishing import faults, installer, legacy
from fake_driver.publishing.publisher import Publisher
from fake_driver.rendering.deviceclasses import render_device_classes
from fake_driver.rendering.ledger import Ledger
from fake_driver.rendering.slices import render_node

PROG = "fake_driver"


Subparsers: TypeAlias = "argparse._SubParsersAction[OneLineParser]"


def build_parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog=PROG, description="Fake DRA driver with real drivers' slice shapes.")
    sub = ap.add_subparsers(dest="command", required=True)

    sub.add_parser("profiles", help="list GPU profiles")
    sub.add_parser("personalities", help="list driver personalities")
    _offline_parsers(sub)
    _cluster_parsers(sub)
    p = sub.add_parser("ledger", help="physical GPUs advertised twice (device plugin + DRA), no cluster")
    _fleet_arg(p)
    p.add_argument("--minor", required=True, type=known_minor)
    return ap


def _fleet_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fleet", required=True, help="fleet YAML file")


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG / ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--minor", type=known_minor, help="API server minor, e.g. 1.35 (default: ask /version)")


def _offline_parsers(sub: Subparsers) -> None:
    """Commands that print what the fleet or a personality renders, with no cluster."""
    p = sub.add_parser("render", help="print the ResourceSlices of nodes (no cluster)")
    _fleet_arg(p)
    p.add_argument("--minor", required=True, type=known_minor, help="API server minor, e.g. 1.35")
    p.add_argument("--node", action="append", type=node_name, help="node name (repeatable; default: all)")
    p.add_argument("--format", choices=("yaml", "json"), default="yaml")

    p = sub.add_parser("classes", help="print a personality's DeviceClasses (no cluster)")
    p.add_argument("--personality", required=True)
    p.add_argument("--mig-profile-classes", metavar="PROFILE", help="add per-MIG-profile classes of this GPU")
    p.add_argument("--format", choices=("yaml", "json"), default="yaml")


def _cluster_parsers(sub: Subparsers) -> None:
    """Commands that write to a cluster: publish, remove, install, legacy, fault."""
    p = sub.add_parser("publish", help="publish the fleet's slices")
    _fleet_arg(p)
    _cluster_args(p)
    p.add_argument("--watch", action="store_true", help="keep reconciling until SIGINT/SIGTERM")
    p.add_argument("--interval", type=positive_float, default=5.0, help="seconds between syncs with --watch")
    p.add_argument("--keep", action="store_true", help="with --watch: leave slices behind on stop")

    p = sub.add_parser("remove", help="delete the fleet's slices")
    _fleet_arg(p)
    _cluster_args(p)

    p = sub.add_parser("install", help="apply a personality's DeviceClasses")
    p.add_argument("--personality", required=True)
    p.add_argument("--fleet", help="check only this fleet's nodes for the device plugin")
    _cluster_args(p)
    p.add_argument(
        "--gpu-resources-enabled-override",
        action="store_true",
        help="install even where nodes advertise nvidia.com/gpu (chart: gpuResourcesEnabledOverride)",
    )
    p.add_argument("--no-compute-domains", action="store_true")
    p.add_argument("--mig-profile-classes", metavar="PROFILE")
    p.add_argument("--extended-resource-name", help="example driver: deviceClass.extendedResourceName")

    p = sub.add_parser("legacy", help="device-plugin simulation")
    p.add_argument("action", choices=("advertise", "withdraw"))
    _fleet_arg(p)
    _cluster_args(p)
    p.add_argument("--nodes", type=node_names, help="comma-separated (default: device_plugin pools)")
    p.add_argument("--count", type=nonnegative_int, help="units to advertise (default: the pool's GPUs)")
    p.add_argument("--remove", action="store_true", help="withdraw: drop the resource instead of 0")

    p = sub.add_parser("fault", help="inject a fault")
    p.add_argument(
        "kind",
        choices=("crash", "recover", "restart", "stale-generation", "drop-attribute", "unhealthy"),
        help="unhealthy adds to the node's sick devices; restart forgets them, as a plugin restart does",
    )
    _fleet_arg(p)
    _cluster_args(p)
    p.add_argument("--nodes", type=node_names, required=True, help="comma-separated node names")
    p.add_argument("--attribute", help="drop-attribute: attribute name, e.g. productName")
    p.add_argument("--devices", type=nonempty_csv, help="unhealthy: device names, e.g. gpu-0")
    p.add_argument("--mode", choices=faults.HEALTH_MODES, help="unhealthy: override the personality")
    p.add_argument("--event", choices=HEALTH_EVENTS, default="xid", help="unhealthy: what the monitor saw")
    p.add_argument("--xid", type=nonnegative_int, default=DEFAULT_XID, help="unhealthy: the XID (event xid)")
    p.add_argument("--wipe", action="store_true", help="crash: also delete the slices (kubelet wipe)")


class _NoAliasDumper(yaml.SafeDumper):
    # Rendered slices share leaf dicts; print them in full instead of as YAML anchors.
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(obj: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(obj, indent=2) + "\n"
    docs = obj if isinstance(obj, list) else [obj]
    return yaml.dump_all(docs, Dumper=_NoAliasDumper, sort_keys=False)


def _render(fleet: Fleet, names: Sequence[str], minor: apilimits.Minor, fmt: str) -> None:
    """One node at a time, so memory stays that of one node however large the fleet; the text
    is what one dump of the whole list would print."""
    for n in names:
        fleet.node(n)  # an unknown name fails before anything is printed
    out, first = sys.stdout, True
    for name in names:
        for s in render_node(fleet.node(name), minor).slices:
            if fmt == "json":
                out.write(("[\n" if first else ",\n") + textwrap.indent(json.dumps(s, indent=2), "  "))
            else:
                out.write(yaml.dump(s, Dumper=_NoAliasDumper, sort_keys=False, explicit_start=not first))
            first = False
    if fmt == "json":
        out.write("[]\n" if first else "\n]\n")


def _api_client(args: argparse.Namespace) -> Any:
    from fake_driver.api.apiclient import new_api_client  # imports the kubernetes client: only when needed

    return new_api_client(args.kubeconfig, args.context)


def _publisher(args: argparse.Namespace, fleet: Fleet) -> Publisher:
    client = _api_client(args)
    minor = args.minor or server_minor(client)
    return Publisher(client, fleet, minor)


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = sys.stdout
    if args.command == "profiles":
        for k, prof in PROFILES.items():
            mig = ", ".join(m.name for m in prof.mig_profiles) or "no MIG"
            out.write(f"{k}\t{prof.product_name}\t{prof.architecture}\t{mig}\n")
    elif args.command == "personalities":
        for k, pers in PERSONALITIES.items():
            out.write(f"{k}\t{pers.driver}\t{pers.release}\n")
    elif args.command == "render":
        fleet = load_fleet(args.fleet)
        minor = apilimits.parse_minor(args.minor)
        _render(fleet, args.node or list(fleet.node_names), minor, args.format)
    elif args.command == "classes":
        mig_hw = get_profile(args.mig_profile_classes) if args.mig_profile_classes else None
        classes = render_device_classes(get_personality(args.personality), mig_profile_classes=mig_hw)
        out.write(_dump(classes, args.format))
    elif args.command == "publish":
        return _publish(args)
    elif args.command == "remove":
        n = _publisher(args, load_fleet(args.fleet)).remove_all()
        out.write(f"removed {n} slices\n")
    elif args.command == "install":
        names = installer.install(
            _api_client(args),
            get_personality(args.personality),
            fleet=load_fleet(args.fleet) if args.fleet else None,
            gpu_resources_enabled_override=args.gpu_resources_enabled_override,
            compute_domains=not args.no_compute_domains,
            mig_profile_classes=get_profile(args.mig_profile_classes) if args.mig_profile_classes else None,
            example_extended_resource=args.extended_resource_name,
        )
        out.write("installed " + ", ".join(names) + "\n")
    elif args.command == "legacy":
        fleet = load_fleet(args.fleet)
        client = _api_client(args)
        if args.action == "advertise":
            done = legacy.advertise(client, fleet, args.nodes, args.count)
            out.write("".join(f"{n}\t{legacy.LEGACY_RESOURCE}={c}\n" for n, c in done.items()))
        else:
            nodes = args.nodes or list(legacy.device_plugin_nodes(fleet))
            for n in nodes:
                fleet.node(n)
            legacy.withdraw(client, nodes, remove=args.remove)
    elif args.command == "fault":
        return _fault(args)
    elif args.command == "ledger":
        fleet = load_fleet(args.fleet)
        led = Ledger.for_fleet(fleet, apilimits.parse_minor(args.minor))
        twice = led.double_advertised()
        for node, gpus in twice.items():
            out.write(f"{node}\t{len(gpus)} GPUs advertised by both the device plugin and DRA\n")
        return 1 if twice else 0
    return 0


def _publish(args: argparse.Namespace) -> int:
    pub = _publisher(args, load_fleet(args.fleet))
    report = pub.publish_all()
    for r in report.results:
        sys.stdout.write(f"{r.node}\t{r.action}\tgeneration={r.generation}\tslices={r.slices}\n")
    if not args.watch:
        return 0
    stop = StopSignal().install()
    while not stop.wait(args.interval):
        for r in pub.sync().results:
            if r.action not in ("unchanged", "crashed"):
                sys.stdout.write(f"{r.node}\t{r.action}\tgeneration={r.generation}\n")
        sys.stdout.flush()
    if not args.keep:
        pub.remove_all()
    return 0


def _fault(args: argparse.Namespace) -> int:
    pub = _publisher(args, load_fleet(args.fleet))
    nodes: list[str] = args.nodes
    if args.kind == "crash":
        faults.crash(pub, nodes, wipe=args.wipe)
    elif args.kind == "recover":
        faults.recover(pub, nodes)
    elif args.kind == "restart":
        faults.restart_plugin(pub, nodes)
    elif args.kind == "stale-generation":
        faults.stale_generation(pub, nodes)
    elif args.kind == "drop-attribute":
        if not args.attribute:
            raise FakeDriverError("drop-attribute needs --attribute NAME")
        faults.drop_attribute(pub, nodes, args.attribute)
    elif args.kind == "unhealthy":
        if not args.devices:
            raise FakeDriverError("unhealthy needs --devices gpu-0[,gpu-1...]")
        for n in nodes:
            faults.mark_unhealthy(pub, n, args.devices, args.mode, event=args.event, xid=args.xid)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(PROG, run, argv, catch_all=True)
