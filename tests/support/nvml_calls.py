"""Which NVML C functions NVIDIA's DRA kubelet plugin can call, read from upstream source in
the Go module cache (the modules the plugin's part downloaded to build it):

- call sites: sigs.k8s.io/dra-driver-nvidia-gpu@<version> (v0.4.1, v0.5.0)
  cmd/gpu-kubelet-plugin/*.go, and the
  libraries it hands NVML to at the versions its go.mod pins: github.com/NVIDIA/go-nvlib
  (pkg/**) and github.com/NVIDIA/nvidia-container-toolkit (pkg/nvcdi/**, internal/**: its CDI
  spec generator). The module zip carries no vendor/ directory: go.mod is what pins them.
  Every method call whose name is a method of go-nvml's Interface, Device, GpuInstance,
  ComputeInstance or EventSet counts (an over-approximation: a same-named method of another
  type counts too).
- go-nvml (pkg/nvml at the version go.mod pins): each such method's body, followed through
  the methods it calls, down to its cgo wrappers (nvml.go: `C.nvmlX(`); a versioned family
  (lib.go: `var nvmlX = nvmlX_v1`, replaced by the newest version dlsym finds) needs any one
  member; lib.go load() installs nvmlErrorString for every Return's Error().

All of the plugin's cgo symbols are linked in (its binary lists ~400 undefined nvml*), but
the dynamic linker resolves them lazily: only what is called must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.controlplane.build import module_dir

PLUGIN = "sigs.k8s.io/dra-driver-nvidia-gpu"
NVML_MODULE = "github.com/NVIDIA/go-nvml"
CALLERS = {
    "github.com/NVIDIA/go-nvlib": ("pkg",),
    "github.com/NVIDIA/nvidia-container-toolkit": ("pkg/nvcdi", "internal"),
}
_FUNC = re.compile(r"^func (?:\(\w+ \*?(\w+)\) )?(\w+)\(.*?^}", re.M | re.S)
_METHOD_TYPES = {"library", "nvmlDevice", "nvmlGpuInstance", "nvmlComputeInstance", "nvmlEventSet"}
_CALL = re.compile(r"\.([A-Z]\w*)\(")


def pinned(go_mod: str, module: str) -> str:
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", go_mod, re.M)
    if found is None:
        raise LookupError(f"{module} is not in the plugin's go.mod")
    return found.group(1)


def _go_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.go") if not p.name.endswith("_test.go") and "mock" not in p.parts)


class GoNvml:
    """go-nvml's methods and what C functions each reaches."""

    def __init__(self, pkg: Path):
        self.methods: dict[str, list[str]] = {}
        self.wrappers: dict[str, frozenset[str]] = {}
        for path in _go_files(pkg):
            if path.parent != pkg:
                continue
            for m in _FUNC.finditer(path.read_text()):
                receiver, name, body = m.group(1), m.group(2), m.group(0)
                if receiver in _METHOD_TYPES:
                    self.methods.setdefault(name, []).append(body)
                elif receiver is None and (calls := set(re.findall(r"\bC\.(nvml\w+)\(", body))):
                    self.wrappers[name] = frozenset(calls)
        lib = (pkg / "lib.go").read_text()
        self.families: dict[str, set[str]] = {}
        for var, first in re.findall(r"^var (nvml\w+|device\w+) = (\w+)$", lib, re.M):
            self.families[var] = {first}
        for var, member in re.findall(r"^\s+(\w+) = (\w+)$", lib, re.M):
            if var in self.families:
                self.families[var].add(member)
        self.at_load = frozenset(re.findall(r"errorStringFunc = (nvml\w+)", lib))

    def needs(self, method: str, seen: set[str] | None = None) -> set[frozenset[str]]:
        """Each C function the method reaches, as the set of symbols any one of which serves."""
        seen = set() if seen is None else seen
        if method in seen:
            return set()
        seen.add(method)
        found: set[frozenset[str]] = set()
        for body in self.methods.get(method, []):
            inner = body.split("{", 1)[1]
            for call in re.findall(r"\b(\w+)\(", inner):
                if call in self.wrappers:
                    found.add(self.wrappers[call])
                elif call in self.families:
                    found.add(frozenset(s for w in self.families[call] for s in self.wrappers.get(w, ())))
            for call in _CALL.findall(inner):
                if call in self.methods:
                    found |= self.needs(call, seen)
        return found


def plugin_nvml_needs(version: str) -> tuple[list[frozenset[str]], int]:
    """The plugin's NVML needs (each a set of alternatives), and how many source files were read."""
    plugin = module_dir(PLUGIN, version)
    go_mod = (plugin / "go.mod").read_text()
    nvml = GoNvml(module_dir(NVML_MODULE, pinned(go_mod, NVML_MODULE)) / "pkg" / "nvml")
    files = _go_files(plugin / "cmd" / "gpu-kubelet-plugin")
    for module, dirs in CALLERS.items():
        root = module_dir(module, pinned(go_mod, module))
        files += [p for d in dirs for p in _go_files(root / d)]
    called = {name for path in files for name in _CALL.findall(path.read_text())}
    needs = {frozenset({sym}) for sym in nvml.at_load}
    for method in sorted(called & set(nvml.methods)):
        needs |= nvml.needs(method)
    return sorted(needs, key=sorted), len(files)
