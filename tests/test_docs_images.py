"""The docs' pictures are as fresh as their templates: each was rendered from the templates whose
hashes docs/images/inputs.json records (`make docs-images` renders them anew), each stays under
the size a repository carries, and the README shows the readiness report."""

from __future__ import annotations

import json

import pytest

from harness.core.versions import REPO_ROOT
from tests.support.docs_images import IMAGES, INPUTS, MAX_BYTES, inputs_hash


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_each_picture_is_newer_than_its_template(name: str) -> None:
    recorded = json.loads((IMAGES / "inputs.json").read_text())
    png = IMAGES / f"{name}.png"

    assert png.exists(), f"{png} is missing: make docs-images"
    assert png.stat().st_size <= MAX_BYTES
    assert recorded.get(name) == inputs_hash(name), (
        f"{png.name} is older than {', '.join(INPUTS[name])}: make docs-images"
    )


def test_the_readme_and_the_docs_show_the_pictures() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    docs = "\n".join(p.read_text() for p in (REPO_ROOT / "docs").glob("*.md"))
    assert "docs/images/readiness.png" in readme.split("## Set-up")[0]  # the first screen
    assert [n for n in INPUTS if f"images/{n}.png" not in readme + docs] == []
