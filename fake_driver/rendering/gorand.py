"""Go's math/rand (rand.New(rand.NewSource(seed)) and Rand.Read), bit for bit.

dra-example-driver derives its GPUs' UUIDs from it (EX internal/profiles/gpu/gpu.go @ v0.4.0,
generateUUIDs): a source seeded by a hash of the node name, 16 bytes read per GPU, formatted by
github.com/google/uuid FromBytes (no version bits set). Ported from Go's src/math/rand/rng.go
(rngSource.Seed, seedrand, Uint64/Int63) and rand.go (read) as of go1.26, unchanged since Go 1
(the Go 1 compatibility promise covers seeded sequences). Its rngCooked table is read from the
local Go's source (cooked()); without Go the UUIDs keep their format but not upstream's values.
Go's license (BSD-style): https://go.dev/LICENSE.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from functools import lru_cache
from pathlib import Path

_LEN, _TAP = 607, 273
_INT32MAX = (1 << 31) - 1
_MASK64 = (1 << 64) - 1
_MASK63 = (1 << 63) - 1


def _seedrand(x: int) -> int:
    """x[n+1] = 48271 * x[n] mod (2**31 - 1), as rng.go computes it (Schrage's method)."""
    hi, lo = _trunc_div(x, 44488), _trunc_mod(x, 44488)
    x = 48271 * lo - 3399 * hi
    return x + _INT32MAX if x < 0 else x


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_mod(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


class GoRand:
    """rand.New(rand.NewSource(seed)): Int63 and Read as Go's *Rand over an *rngSource."""

    def __init__(self, seed: int, table: tuple[int, ...]) -> None:
        self._tap, self._feed = 0, _LEN - _TAP
        seed = _trunc_mod(seed, _INT32MAX)
        if seed < 0:
            seed += _INT32MAX
        if seed == 0:
            seed = 89482311
        x = seed
        vec = [0] * _LEN
        for i in range(-20, _LEN):
            x = _seedrand(x)
            if i >= 0:
                u = x << 40
                x = _seedrand(x)
                u ^= x << 20
                x = _seedrand(x)
                u ^= x
                vec[i] = (u ^ table[i]) & _MASK64  # held as uint64; Go's int64 wraps the same
        self._vec = vec
        self._read_val = 0
        self._read_pos = 0

    def uint64(self) -> int:
        self._tap = (self._tap - 1) % _LEN
        self._feed = (self._feed - 1) % _LEN
        x = (self._vec[self._feed] + self._vec[self._tap]) & _MASK64
        self._vec[self._feed] = x
        return x

    def int63(self) -> int:
        return self.uint64() & _MASK63

    def read(self, n: int) -> bytes:
        """Rand.Read: 7 bytes of each Int63, low byte first, the rest kept for the next call."""
        out = bytearray()
        pos, val = self._read_pos, self._read_val
        for _ in range(n):
            if pos == 0:
                val, pos = self.int63(), 7
            out.append(val & 0xFF)
            val >>= 8
            pos -= 1
        self._read_pos, self._read_val = pos, val
        return bytes(out)


def java_hash(s: str) -> int:
    """EX gpu.go hash: h = 31*h + rune over the string, in Go's wrapping int64."""
    h = 0
    for c in s:
        h = (31 * h + ord(c)) & _MASK64
    return h - (1 << 64) if h >> 63 else h


@lru_cache(maxsize=8192)  # a whole fleet (at most 5,000 nodes): ~1.7 ms a node to seed
def example_uuids(node: str, count: int) -> tuple[str, ...]:
    """EX gpu.go generateUUIDs(nodeName, numGPUs) @ v0.4.0: "gpu-" + uuid.FromBytes(16 bytes)."""
    table = cooked()
    if table is None:  # no Go here: the same format, values of our own (stable per node)
        digests = (hashlib.sha256(f"{node}/{i}".encode()).hexdigest() for i in range(count))
        return tuple(f"gpu-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}" for h in digests)
    rng = GoRand(java_hash(node), table)
    out = []
    for _ in range(count):
        h = rng.read(16).hex()
        out.append(f"gpu-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return tuple(out)


def _cooked_table() -> tuple[int, ...] | None:
    """rng.go's rngCooked (607 int64s), read from the Go installation's own source at run time
    (never copied into this repository); None where there is no Go (or no source) here."""
    try:
        done = subprocess.run(
            ["go", "env", "GOROOT"], capture_output=True, text=True, timeout=30, check=False
        )
        source = (Path(done.stdout.strip()) / "src" / "math" / "rand" / "rng.go").read_text()
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"rngCooked\s*\[\w+\]int64\s*=\s*\[\.\.\.\]int64\{([^}]*)\}", source)
    values = tuple(int(v) for v in re.findall(r"-?\d+", m[1])) if m else ()
    return values if len(values) == _LEN else None


@lru_cache(maxsize=1)
def cooked() -> tuple[int, ...] | None:
    return _cooked_table()
