"""The docs' pictures (docs/images/): what each is rendered from, for the freshness check
(tests/test_docs_images.py) and the renderer (tests/e2e/test_docs_images.py)."""

from __future__ import annotations

import hashlib

from harness.core.versions import REPO_ROOT

IMAGES = REPO_ROOT / "docs" / "images"
MAX_BYTES = 200_000  # what a repository carries per picture
# Picture -> the templates (and, for the SVG curve, the code that draws it) it shows.
INPUTS = {
    "readiness": ("reports/templates/readiness.html.j2",),
    "qualify": ("reports/templates/qualify.html.j2",),
    "nightly-diff": ("reports/templates/readiness.html.j2", "reports/templates/baseline.html.j2"),
    "cost-curve": ("harness/bench/curve.py",),
}


def inputs_hash(name: str) -> str:
    digest = hashlib.sha256()
    for path in INPUTS[name]:
        digest.update(path.encode() + b"\0" + (REPO_ROOT / path).read_bytes())
    return digest.hexdigest()
