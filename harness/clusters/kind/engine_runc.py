"""runc with CAP_SYS_RESOURCE taken out of what it is asked to apply (standard library only).

dockerd runs it in place of runc (its default runtime) on hosts whose capability bounding set
lacks CAP_SYS_RESOURCE: a privileged container asks for every capability, and runc fails with
"unable to apply caps: operation not permitted" for the one it cannot have. kind's nodes are
privileged containers, and `docker exec --privileged` goes through here too (`--process FILE`).

    engine_runc.py REAL_RUNC [runc arguments...]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

CAP = "CAP_SYS_RESOURCE"


def strip_cap(process: dict[str, object]) -> None:
    caps = process.get("capabilities")
    if isinstance(caps, dict):
        for kind, names in caps.items():
            if isinstance(names, list):
                caps[kind] = [n for n in names if n != CAP]


def _rewrite(path: Path, in_process: bool) -> None:
    data = json.loads(path.read_text())
    strip_cap(data.get("process", {}) if in_process else data)
    path.write_text(json.dumps(data))


def option(args: list[str], *names: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` among runc's arguments."""
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(f"{name}="):
                return arg.split("=", 1)[1]
    return None


def main(argv: list[str]) -> None:
    runc, args = argv[0], argv[1:]
    if "create" in args or "run" in args:
        bundle = option(args, "--bundle", "-b") or "."
        _rewrite(Path(bundle) / "config.json", in_process=True)
    if "exec" in args:
        process = option(args, "--process", "-p")
        if process:
            _rewrite(Path(process), in_process=False)
    os.execv(runc, [runc, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
