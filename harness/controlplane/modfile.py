"""Generate controlplane/mod/<minor>.mod from k8s.io/kubernetes's own go.mod.

k8s.io/kubernetes requires its staging modules at v0.0.0 and resolves them with
`replace k8s.io/X => ./staging/src/k8s.io/X`; a consumer must replace each of them with
the published `k8s.io/X v0.<minor>.<patch>`. The list differs by minor (31 in 1.34/1.35,
33 from 1.36), so it is read from upstream, never kept by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

_STAGING = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/src/", re.MULTILINE)
_GO = re.compile(r"^go\s+(\S+)", re.MULTILINE)
_GODEBUG = re.compile(r"^godebug\s+.*$", re.MULTILINE)
_ETCD = re.compile(r"^\s*go\.etcd\.io/etcd/server/v3\s+(\S+)", re.MULTILINE)

MODULE_PATH = "github.com/dra-harness/controlplane"

# Modules the project writes a stand-in for (module -> its directory under controlplane/), used
# by a modfile only while the module proxy refuses the real module's source. The kubelet of
# k8s.io/kubernetes@v1.38.0-beta.0 imports sigs.k8s.io/iptables-wrappers@v1.0.0
# (pkg/kubelet/kubelet_network_linux.go), whose .info and .mod are served and .zip refused (403).
STANDINS: Mapping[str, str] = {"sigs.k8s.io/iptables-wrappers": "iptables-wrappers"}
# Every stand-in line of a modfile ends with it: what the control plane's inputs hash leaves
# out (k8slocal imports no stand-in) and what standins_used reads back.
STANDIN_MARK = "// stand-in"
_STANDIN_REASON = re.compile(rf"^{re.escape(STANDIN_MARK)}: (\S+@\S+): (.*)$", re.MULTILINE)
_STANDIN_LINE = re.compile(
    rf"^(?:replace (\S+) (\S+) => \./(\S+) )?{re.escape(STANDIN_MARK)}\b.*$", re.MULTILINE
)


@dataclass(frozen=True)
class Standin:
    module: str
    version: str
    directory: str  # relative to controlplane/
    reason: str  # why the real module is not used: the proxy's answer


# module@version -> None when the proxy serves its source, else its refusal (one line)
Probe = Callable[[str, str], "str | None"]


def standins_needed(upstream_gomod: str, probe: Probe) -> list[Standin]:
    """The stand-ins a modfile of this upstream go.mod needs: each STANDINS module upstream
    requires whose source the proxy refuses (the real module is always tried first)."""
    out = []
    for module, directory in sorted(STANDINS.items()):
        m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", upstream_gomod, re.MULTILINE)
        if m is None:
            continue
        refused = probe(module, m.group(1))
        if refused is not None:
            out.append(Standin(module, m.group(1), directory, refused))
    return out


def standins_used(modfile_text: str) -> list[Standin]:
    """The stand-ins a generated modfile replaces its module with (reason: its comment line)."""
    reasons = dict(_STANDIN_REASON.findall(modfile_text))
    return [
        Standin(m[1], m[2], m[3], reasons.get(f"{m[1]}@{m[2]}", ""))
        for m in _STANDIN_LINE.finditer(modfile_text)
        if m[1] is not None
    ]


def without_standins(modfile_text: str) -> str:
    """The modfile as the control plane sees it: k8slocal imports no stand-in module."""
    kept = [line for line in modfile_text.splitlines() if not _STANDIN_LINE.fullmatch(line)]
    return "\n".join(kept).rstrip("\n") + "\n"


def _standin_lines(standins: list[Standin]) -> list[str]:
    lines = []
    for s in standins:
        lines += [
            f"{STANDIN_MARK}: {s.module}@{s.version}: {s.reason.removeprefix(f'{s.module}@{s.version}: ')}",
            f"{STANDIN_MARK}: drop the day it is served: regenerate (python -m harness.controlplane.modfile)",
            f"replace {s.module} {s.version} => ./{s.directory} {STANDIN_MARK}",
        ]
    return [*lines, ""] if lines else []


def staging_modules(upstream_gomod: str) -> list[str]:
    """Every module k8s.io/kubernetes resolves from its own staging tree."""
    return sorted(set(_STAGING.findall(upstream_gomod)))


def render_modfile(
    upstream_gomod: str, kubernetes: str, staging: str, standins: list[Standin] | None = None
) -> str:
    """The wrapper go.mod for one minor, before `go mod tidy` fills in the requires; each
    stand-in the kubelet needs as a replace of its own, marked with STANDIN_MARK."""
    go = _GO.search(upstream_gomod)
    etcd = _ETCD.search(upstream_gomod)
    mods = staging_modules(upstream_gomod)
    if go is None or etcd is None or not mods:
        raise ValueError("not a k8s.io/kubernetes go.mod: go directive, etcd or staging replaces missing")
    lines = [
        f"// Generated from k8s.io/kubernetes@{kubernetes} by harness.controlplane.modfile. DO NOT EDIT.",
        f"module {MODULE_PATH}",
        "",
        f"go {go.group(1)}",
        "",
        *_GODEBUG.findall(upstream_gomod),
        "",
        "require (",
        f"\tk8s.io/kubernetes {kubernetes}",
        f"\tgo.etcd.io/etcd/server/v3 {etcd.group(1)}",
        ")",
        "",
        "replace (",
        *(f"\t{m} => {m} {staging}" for m in mods),
        ")",
        "",
        *_standin_lines(standins or []),
    ]
    return "\n".join(lines)


def proxy_probe(minor_env: Mapping[str, str]) -> Probe:
    """Ask the module proxy for a module's source (`go mod download`): None when served, else
    the last line of its refusal."""
    import datetime
    import subprocess
    import tempfile

    def probe(module: str, version: str) -> str | None:
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            capture_output=True,
            text=True,
            check=False,
            env=dict(minor_env),
            cwd=tempfile.gettempdir(),
            timeout=300,
        )
        if done.returncode == 0:
            return None
        got = re.search(r'"Error":\s*"([^"]*)', done.stdout)
        text = (got.group(1) if got else done.stderr).replace("\\n\\t", " ").replace("\\n", " ")
        reason = " ".join(text.split())[-300:] or f"exit {done.returncode}"
        return f"refused on {datetime.date.today().isoformat()}: {reason}"

    return probe


def _main(argv: list[str]) -> int:
    """`python -m harness.controlplane.modfile [MINOR ...]`: (re)generate the modfiles."""
    import json
    import subprocess

    from harness.controlplane.build import CONTROLPLANE_DIR, _go_env, modfile_path
    from harness.core.errors import HarnessError
    from harness.core.versions import load_matrix

    try:
        matrix = load_matrix()
        minors = [matrix.minor(m) for m in argv] or list(matrix.minors.values())
        for minor in minors:
            got = subprocess.run(
                ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{minor.kubernetes}"],
                capture_output=True,
                text=True,
                check=True,
                env=_go_env(minor),
            )
            upstream = Path(json.loads(got.stdout)["GoMod"]).read_text()
            mod = modfile_path(minor)
            standins = standins_needed(upstream, proxy_probe(_go_env(minor)))
            mod.write_text(render_modfile(upstream, minor.kubernetes, minor.staging, standins))
            subprocess.run(
                ["go", "mod", "tidy", f"-modfile={mod.relative_to(CONTROLPLANE_DIR)}"],
                cwd=CONTROLPLANE_DIR,
                check=True,
                env=_go_env(minor),
            )
            count = len(staging_modules(upstream))
            used = "".join(
                f"; {s.module}@{s.version}: the project's stand-in ./{s.directory}" for s in standins
            )
            print(f"{mod.relative_to(CONTROLPLANE_DIR.parent)}: {count} staging modules{used}")
    except (HarnessError, subprocess.CalledProcessError) as err:
        print(f"modfile: {err}")
        return 1
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))
