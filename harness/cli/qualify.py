"""`dra-harness qualify`: its options and the command (the work is in harness.qualify)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fake_driver.command.cliargs import nonempty


def _from_spec(args: argparse.Namespace) -> None:
    """--driver-spec NAME@VERSION: what versions.toml [drivers] knows of the driver fills
    every option the user left out (its chart's class is named after the driver)."""
    from harness.core.drivers import driver_ref
    from harness.core.errors import HarnessError

    if args.driver_spec:
        spec, version = driver_ref(args.driver_spec)
        for option, value in spec.qualify_defaults(version).items():
            setattr(args, option, getattr(args, option) or value)
    if not args.driver_name or not args.device_class:
        raise HarnessError("qualify needs --driver-name and --device-class, or --driver-spec NAME@VERSION")
    args.extended_resource = args.extended_resource or "nvidia.com/gpu"


def cmd_qualify(args: argparse.Namespace) -> int:
    from harness.kit.incluster import resolve_kubeconfig
    from harness.qualify.run import DEFAULT_SUITES, ContainerViewArgs, QualifyRequest, qualify

    if args.print_rbac:
        from harness.qualify.rbac import rbac_yaml

        print(rbac_yaml(), end="")
        return 0
    if args.print_job:
        from harness.qualify.job import job_yaml

        print(job_yaml(), end="")
        return 0
    if args.print_sonobuoy_plugin:
        from harness.qualify.sonobuoy import plugin_yaml

        print(plugin_yaml(), end="")
        return 0
    _from_spec(args)
    kubeconfig, pod = resolve_kubeconfig(args.kubeconfig)
    req = QualifyRequest(
        kubeconfig,
        args.driver_name,
        args.device_class,
        args.extended_resource,
        args.node_selector,
        tuple(args.suite) if args.suite else DEFAULT_SUITES,
        Path(args.out) if args.out else None,
        ContainerViewArgs(
            args.container_command or "", args.container_device_pattern or "", args.container_image or ""
        ),
        args.driver_release or "",
        in_cluster=pod,
        plugin_restart=args.plugin_restart_command or "",
        inject_fault=args.inject_fault_command or "",
    )
    return qualify(req)


def add_qualify_parser(sub: Any) -> None:
    q = sub.add_parser(
        "qualify",
        help="qualify an installed DRA driver (exit 0 pass, 3 failure, 1 could not start)",
    )
    q.add_argument(
        "--kubeconfig",
        type=nonempty,
        help="default: $KUBECONFIG, then ~/.kube/config, then (in a pod) its service account",
    )
    q.add_argument(
        "--driver-spec",
        type=nonempty,
        metavar="NAME@VERSION",
        help="a driver versions.toml [drivers] knows (example@v0.4.0): fills the options below",
    )
    q.add_argument("--driver-name", type=nonempty, help="the driver's name, e.g. gpu.nvidia.com")
    q.add_argument(
        "--driver-release",
        type=nonempty,
        help="what the driver is, e.g. its image and tag (the report's header; --driver-spec fills it)",
    )
    q.add_argument("--device-class", type=nonempty, help="the DeviceClass of its GPUs")
    q.add_argument(
        "--extended-resource", type=nonempty, help="legacy resource name (default: nvidia.com/gpu)"
    )
    q.add_argument(
        "--container-command",
        type=nonempty,
        help="node side: the command a container runs to show its devices (e.g. env)",
    )
    q.add_argument(
        "--container-device-pattern",
        type=nonempty,
        help="node side: a regex with a (?P<device>...) group, one match per device in that output",
    )
    q.add_argument("--container-image", type=nonempty, help="node side: the image to run")
    q.add_argument(
        "--plugin-restart-command",
        type=nonempty,
        # 300 s: harness.kit.nodepods.PLUGIN_RESTART_TIMEOUT (not imported: the CLI starts lazily)
        help="node side: restarts the driver's kubelet plugin on node {node} and returns once it "
        "serves again (e.g. a kubectl delete of the node's plugin pod, then a wait for the new one); "
        "run without a shell, with KUBECONFIG set to qualify's kubeconfig, killed after 300 s",
    )
    q.add_argument(
        "--inject-fault-command",
        type=nonempty,
        # 120 s: harness.kit.nodepods.INJECT_FAULT_TIMEOUT
        help="device-health: makes device {device} of node {node} sick (the driver must then taint "
        "it NoSchedule/NoExecute or withdraw it); run without a shell, with KUBECONFIG set, killed "
        "after 120 s; without it device-health is NOT TESTED",
    )
    q.add_argument("--node-selector", default="", help="key=value[,key=value]: the nodes tests may use")
    q.add_argument(
        "--suite", action="append", type=nonempty, help="test paths (default: the driver's suites)"
    )
    q.add_argument(
        "--out",
        type=nonempty,
        help="results directory (default: $SONOBUOY_RESULTS_DIR, else reports/out/qualify-<time>)",
    )
    q.add_argument(
        "--print-rbac",
        action="store_true",
        help="print the in-cluster Job's ServiceAccount and ClusterRole (deploy/qualify/rbac.yaml) and exit",
    )
    q.add_argument(
        "--print-job",
        action="store_true",
        help="print the in-cluster Job and its results volume (deploy/qualify/job.yaml) and exit",
    )
    q.add_argument(
        "--print-sonobuoy-plugin",
        action="store_true",
        help="print the Sonobuoy plugin definition (deploy/qualify/sonobuoy-plugin.yaml) and exit",
    )
    q.set_defaults(func=cmd_qualify)
