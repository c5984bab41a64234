"""The layout page (docs/layout.md, linked from the README) names every package and module under
harness/, and nothing that is not there: the table is checked against the tree, so it cannot
drift from it."""

from __future__ import annotations

import re
from pathlib import Path

from harness.core.versions import REPO_ROOT

HARNESS = REPO_ROOT / "harness"
HEADER = "| layer | package | modules | what they hold |"
CODE = re.compile(r"`([^`]+)`")


def _layout_section() -> str:
    text = (REPO_ROOT / "docs" / "layout.md").read_text()
    start = text.index("\n## Layout\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _readme_modules() -> list[str]:
    """harness/ paths the layout table lists: `clusters/kind/` + `provider` -> clusters/kind/provider."""
    lines = _layout_section().splitlines()
    rows = lines[lines.index(HEADER) + 2 :]
    listed: list[str] = []
    for row in rows:
        if not row.startswith("|"):
            break
        cells = [c.strip() for c in row.strip("|").split("|")]
        package = CODE.fullmatch(cells[1])
        assert package is not None, f"not a package cell: {row}"
        assert package.group(1).endswith("/"), f"not a package cell: {row}"
        listed.append(package.group(1).rstrip("/"))
        listed += [f"{package.group(1)}{m}" for m in CODE.findall(cells[2])]
    return listed


def _tree_modules() -> list[str]:
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        rel = path.relative_to(HARNESS)
        if "__pycache__" in rel.parts or rel == Path("__init__.py"):
            continue
        found.append(str(rel.parent) if rel.name == "__init__.py" else str(rel.with_suffix("")))
    return found


def test_the_readme_layout_lists_every_harness_package_and_module() -> None:
    missing = sorted(set(_tree_modules()) - set(_readme_modules()))
    assert missing == [], "add these to the layout table (docs/layout.md)"


def test_the_readme_layout_lists_nothing_that_is_not_under_harness() -> None:
    gone = sorted(set(_readme_modules()) - set(_tree_modules()))
    assert gone == [], "docs/layout.md's table lists these; harness/ has no such module"


def test_the_readme_layout_lists_each_module_once() -> None:
    listed = _readme_modules()
    assert sorted({m for m in listed if listed.count(m) > 1}) == []
