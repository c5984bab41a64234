"""Generate controlplane/mod/<minor>.mod from k8s.io/kubernetes's own go.mod.

k8s.io/kubernetes requires its staging modules at v0.0.0 and resolves them with
`replace k8s.io/X => ./staging/src/k8s.io/X`; a consumer must replace each of them with
the published `k8s.io/X v0.<minor>.<patch>`. The list differs by minor (31 in 1.34/1.35,
33 from 1.36), so it is read from upstream, never kept by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

_STAGING = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/src/", re.MULTILINE)
_GO = re.compile(r"^go\s+(\S+)", re.MULTILINE)
_GODEBUG = re.compile(r"^godebug\s+.*$", re.MULTILINE)
_ETCD = re.compile(r"^\s*go\.etcd\.io/etcd/server/v3\s+(\S+)", re.MULTILINE)

MODULE_PATH = "github.com/dra-harness/controlplane"


def staging_modules(upstream_gomod: str) -> list[str]:
    """Every module k8s.io/kubernetes resolves from its own staging tree."""
    return sorted(set(_STAGING.findall(upstream_gomod)))


def render_modfile(upstream_gomod: str, kubernetes: str, staging: str) -> str:
    """The wrapper go.mod for one minor, before `go mod tidy` fills in the requires."""
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
    ]
    return "\n".join(lines)


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
            mod.write_text(render_modfile(upstream, minor.kubernetes, minor.staging))
            subprocess.run(
                ["go", "mod", "tidy", f"-modfile={mod.relative_to(CONTROLPLANE_DIR)}"],
                cwd=CONTROLPLANE_DIR,
                check=True,
                env=_go_env(minor),
            )
            count = len(staging_modules(upstream))
            print(f"{mod.relative_to(CONTROLPLANE_DIR.parent)}: {count} staging modules")
    except (HarnessError, subprocess.CalledProcessError) as err:
        print(f"modfile: {err}")
        return 1
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))
