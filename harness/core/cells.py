"""A matrix cell: Kubernetes minor x driver personality x gate profile, the one type for a
cell's identity (id, slug, number). A running cluster's cell also carries what the cluster
has (provider, the exact release, every gate's effective value); those are not part of the
identity."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.core.errors import HarnessError
from harness.core.versions import minor_number


class MatrixError(HarnessError):
    """A cell filter or matrix input that names nothing runnable."""


@dataclass(frozen=True, order=True)
class Cell:
    minor: str  # "1.37"
    personality: str = ""  # "" for a cluster's cell: the cluster does not know the driver
    profile: str = ""  # gate profile name, or "server" for a cluster we did not configure
    provider: str = field(default="", compare=False)
    kubernetes: str = field(default="", compare=False)  # "v1.37.2"
    # the effective value of every gate the cluster knows
    gates: dict[str, bool] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        return f"{self.minor}/{self.personality}/{self.profile}"

    @property
    def slug(self) -> str:
        """Filesystem-safe form: 1.37_nvidia-v25.12_dra-all."""
        return self.id.replace("/", "_")

    @property
    def number(self) -> tuple[int, int]:
        return minor_number(self.minor)

    def gate(self, name: str) -> bool | None:
        """True/False, or None when the cluster does not know the gate at all."""
        return self.gates.get(name)

    @classmethod
    def parse(cls, text: str) -> Cell:
        parts = text.strip().split("/")
        if len(parts) != 3 or not all(parts):
            raise MatrixError(
                f"cell {text!r} is not <minor>/<personality>/<profile>, e.g. 1.37/nvidia-v25.12/dra-all"
            )
        minor, personality, profile = parts
        return cls(minor, personality, profile)
