"""Offline kind images built on this machine: the node image per minor and the fake driver's
image, from Debian root filesystems and the project's own builds (no registry)."""
