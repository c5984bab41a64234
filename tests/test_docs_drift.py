"""The README and docs/ against the code, so the next drift fails a test instead of a reader:
every `make` target they name exists, every repository path they name exists, every option they
give a `dra-harness` command is that command's, every suite directory has its row in
docs/suites.md and every command of the CLI is documented somewhere (issue 53)."""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterator

import pytest

from harness.cli.main import build_parser
from harness.core.versions import REPO_ROOT, load_matrix

DOCS = [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
TOP = "harness|fixtures|suites|tests|fake_driver|docs|deploy|charts|bench|plugins|examples|nvmlstub"
_PATH = re.compile(rf"^(?:\./)?(?:{TOP}|\.github|\.ci)/[\w./-]*$")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```.*?$(.*?)^```", re.S | re.M)
_MAKE = re.compile(r"(?:^|[\s`(])make ([a-z][a-z0-9-]*)")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _code(text: str) -> Iterator[str]:
    """Every line of code a document shows: fenced blocks' lines and inline spans."""
    for block in _FENCE.findall(text):
        yield from block.splitlines()
    yield from _CODE_SPAN.findall(_FENCE.sub("", text))


def _docs() -> Iterator[tuple[str, str]]:
    for doc in DOCS:
        for line in _code(doc.read_text()):
            yield doc.relative_to(REPO_ROOT).as_posix(), line


def _make_targets() -> set[str]:
    text = (REPO_ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z0-9-]*)\s*:(?!=)", text, re.M))


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands() -> dict[tuple[str, ...], set[str]]:
    """Command path -> the options it takes (its own and its parents', e.g. --help)."""
    out: dict[tuple[str, ...], set[str]] = {}

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        out[path] = {o for a in parser._actions for o in a.option_strings}
        for name, sub in _subparsers(parser).items():
            walk((*path, name), sub)

    walk((), build_parser())
    return out


def test_every_make_target_the_docs_name_exists() -> None:
    targets = _make_targets()
    named = {(doc, t) for doc, line in _docs() for t in _MAKE.findall(line.split("#")[0])}
    assert sorted((doc, t) for doc, t in named if t not in targets) == []


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = []
    for doc, span in _docs():
        for token in span.split():
            path = re.sub(r"(::.*|:\d+)$", "", token.strip("'\",.;:()[]"))
            if not _PATH.match(path) or path.startswith(("reports/out", "docs/images")):
                continue
            if not (REPO_ROOT / path).exists():
                missing.append((doc, path))
    assert sorted(set(missing)) == []


def test_every_option_the_docs_give_a_command_is_that_commands() -> None:
    commands = _commands()
    wrong = []
    for doc, line in _docs():
        for m in re.finditer(r"(?:dra-harness|kubectl dra-scan)((?: [a-z][a-z-]*)*)(.*)", line):
            words = m.group(1).split()
            path: tuple[str, ...] = ("scan",) if m.group(0).startswith("kubectl") else ()
            for w in words:
                if (*path, w) not in commands:
                    break
                path = (*path, w)
            if path == ():
                continue
            rest = (m.group(1) + m.group(2)).split(" -- ")[0].split("#")[0]
            for option in _OPTION.findall(rest):
                if option not in commands[path]:
                    wrong.append((doc, " ".join(path), option))
    assert sorted(set(wrong)) == []


def test_every_suite_directory_has_its_row_in_the_suites_page() -> None:
    page = (REPO_ROOT / "docs" / "suites.md").read_text()
    suites = sorted(p.name for p in (REPO_ROOT / "suites").iterdir() if (p / "__init__.py").exists())
    assert [s for s in suites if f"`suites/{s}`" not in page] == []


@pytest.mark.parametrize("command", sorted(c[0] for c in _commands() if len(c) == 1))
def test_every_command_of_the_cli_is_documented(command: str) -> None:
    text = "\n".join(d.read_text() for d in DOCS)
    assert re.search(rf"dra-harness {re.escape(command)}\b", text), f"no doc shows `dra-harness {command}`"


def test_the_patterns_recognise_a_target_a_path_and_an_option() -> None:
    """What the checks above read from a line (a planted drift in docs/ fails each of them)."""
    planted = "`make no-such-target` `harness/no_such.py` `dra-harness scan --no-such-option`"
    assert _MAKE.findall(planted) == ["no-such-target"]
    assert not (REPO_ROOT / "harness/no_such.py").exists()
    assert _PATH.match("harness/no_such.py")
    assert "--no-such-option" not in _commands()[("scan",)]
    assert "--context" in _commands()[("scan",)]


def test_the_readmes_cold_build_figures_are_the_budgets() -> None:
    matrix = load_matrix()
    minor = matrix.default_minor
    budget = tomllib.loads((REPO_ROOT / "versions.toml").read_text())["budget"]["cold_seconds"]
    readme = (REPO_ROOT / "README.md").read_text()
    said = f"k8slocal {minor} {budget[f'k8slocal {minor}']} s, kwok {budget['kwok']} s"
    assert said in " ".join(readme.split()), f"the README's cold build figures are not {said!r}"


def test_every_test_the_docs_name_by_node_id_exists() -> None:
    """CONTRIBUTING.md's checklists name the test that fails when a step is forgotten."""
    named = {(doc, m) for doc, line in _docs() for m in re.findall(r"(tests/[\w/]+\.py)::(\w+)", line)}
    assert len(named) >= 10
    missing = [
        (doc, f"{path}::{name}")
        for doc, (path, name) in sorted(named)
        if f"def {name}(" not in (REPO_ROOT / path).read_text()
    ]
    assert missing == []
