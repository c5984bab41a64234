"""Kubeconfig files checked before the official client reads them.

The client reports a file that is not YAML, a list, bytes that are not UTF-8 or a
certificate that is not base64 with a traceback from deep inside it, or only when it first
connects. ``check_kubeconfig`` reads the file(s) the client would read and raises one
``KubeconfigError`` line naming the file and what is wrong; it makes no request.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fake_driver.core.errors import KubeconfigError
from fake_driver.core.paths import not_a_regular_file

DEFAULT_KUBECONFIG = "~/.kube/config"
# Fields holding PEM blocks as base64, per section of the kubeconfig.
PEM_FIELDS = {
    "cluster": ("certificate-authority-data",),
    "user": ("client-certificate-data", "client-key-data"),
}
_KIND = {list: "a YAML list", str: "a YAML string", int: "a YAML number", float: "a YAML number"}


@dataclass(frozen=True)
class Kubeconfig:
    """What a checked kubeconfig selects: its files (as the client reads them), context, server."""

    paths: tuple[Path, ...]
    context: str
    server: str

    @property
    def where(self) -> str:
        return os.pathsep.join(str(p) for p in self.paths)


def kubeconfig_paths(kubeconfig: str | os.PathLike[str] | None) -> tuple[Path, ...]:
    """The files the client reads: the argument, else $KUBECONFIG, else ~/.kube/config;
    a value may list several, separated like $PATH (the client skips missing ones)."""
    raw = os.fspath(kubeconfig) if kubeconfig is not None else os.environ.get("KUBECONFIG")
    parts = [p for p in (raw or DEFAULT_KUBECONFIG).split(os.pathsep) if p]
    paths = tuple(Path(p).expanduser() for p in parts)
    existing = tuple(p for p in paths if p.exists())
    if not existing:
        names = ", ".join(str(p) for p in paths)
        raise KubeconfigError(f"kubeconfig {names} does not exist")
    for path in existing:  # refused before it is opened: a FIFO blocks, /dev/zero never ends
        kind = not_a_regular_file(path)
        if kind:
            raise KubeconfigError(f"kubeconfig {path} is {kind}, not a file")
    return existing


def _read(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {err.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise KubeconfigError(
            f"kubeconfig {path} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "unreadable"
        raise KubeconfigError(f"kubeconfig {path} is not YAML: {problem}{at}") from None
    if doc is None:
        raise KubeconfigError(f"kubeconfig {path} is empty")
    if not isinstance(doc, dict):
        kind = _KIND.get(type(doc), f"a YAML {type(doc).__name__}")
        raise KubeconfigError(f"kubeconfig {path} holds {kind}, not a kubeconfig mapping")
    return doc


def _entries(path: Path, doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    entries = doc.get(key) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise KubeconfigError(f"kubeconfig {path}: {key} is not a list of mappings")
    return entries


def _find(docs: list[tuple[Path, dict[str, Any]]], key: str, name: str) -> tuple[Path, dict[str, Any]]:
    """The first entry of that name across the files (the client's merge rule), and its file."""
    names = []
    for path, doc in docs:
        for entry in _entries(path, doc, key):
            if entry.get("name") == name:
                section = entry.get(key[:-1]) or {}
                if not isinstance(section, dict):
                    raise KubeconfigError(f"kubeconfig {path}: {key[:-1]} {name!r} is not a mapping")
                return path, section
            names.append(str(entry.get("name")))
    where = os.pathsep.join(str(p) for p, _ in docs)
    raise KubeconfigError(
        f"kubeconfig {where} has no {key[:-1]} {name!r} ({key}: {', '.join(names) or 'none'})"
    )


def _check_pem(path: Path, kind: str, name: str, section: dict[str, Any]) -> None:
    for field in PEM_FIELDS[kind]:
        value = section.get(field)
        if value is None:
            continue
        where = f"kubeconfig {path}: {field} of {kind} {name!r}"
        try:
            # Strict: the client's decoder drops stray characters and fails later, at the handshake.
            pem = base64.b64decode("".join(str(value).split()), validate=True)
        except binascii.Error:
            raise KubeconfigError(f"{where} is not valid base64") from None
        if b"-----BEGIN " not in pem:
            raise KubeconfigError(f"{where} holds no PEM block")


def check_kubeconfig(kubeconfig: str | os.PathLike[str] | None, context: str | None = None) -> Kubeconfig:
    """Check what the client will use (the context, its cluster and user); raise one line."""
    paths = kubeconfig_paths(kubeconfig)
    docs = [(p, _read(p)) for p in paths]
    where = os.pathsep.join(str(p) for p in paths)
    name = context or next((str(d["current-context"]) for _, d in docs if d.get("current-context")), "")
    if not name:
        raise KubeconfigError(f"kubeconfig {where} has no current-context")
    _, ctx = _find(docs, "contexts", name)
    cluster_path, cluster = _find(docs, "clusters", str(ctx.get("cluster")))
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"kubeconfig {cluster_path}: cluster {ctx.get('cluster')!r} has no server")
    _check_pem(cluster_path, "cluster", str(ctx.get("cluster")), cluster)
    if ctx.get("user"):
        user_path, user = _find(docs, "users", str(ctx["user"]))
        _check_pem(user_path, "user", str(ctx["user"]), user)
    return Kubeconfig(paths, name, server)
