"""Mutant builds (harness/controlplane/mutantparts.py) that cannot be made say so in one line
naming the part and the make target, and the other mutants are still built: a patch that does
not apply, a patch whose code does not compile. Real `patch` and `go build` on the released
module, in a cache of the test's own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli.parts import build_parts, mutant_parts
from harness.controlplane import mutantparts
from harness.controlplane.mutantparts import ensure_mutant, mutant_built, mutant_names, mutant_path
from harness.core.drivers import driver_ref
from harness.core.errors import HarnessError
from harness.core.versions import REPO_ROOT

SPEC, VERSION = driver_ref("example@v0.4.0")
GOOD = "wrong-device"
NOT_APPLYING = """# a hunk whose context the release does not have
--- a/cmd/dra-example-kubeletplugin/driver.go
+++ b/cmd/dra-example-kubeletplugin/driver.go
@@ -1,3 +1,3 @@
-no such line
+nor this one
 in the released file
"""
NOT_COMPILING = """# applies, then does not compile
--- a/cmd/dra-example-kubeletplugin/checkpoint.go
+++ b/cmd/dra-example-kubeletplugin/checkpoint.go
@@ -17,1 +17,2 @@
 package main
+var broken int = "not an int"
"""


@pytest.fixture
def mutants_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A mutants/ directory and a build cache of this test's own, with the good mutant's
    built binary copied in (the other mutants' builds are what is tested)."""
    if shutil.which("go") is None or shutil.which("patch") is None:
        pytest.skip("go and patch are needed to build mutants")
    built = mutant_built(SPEC, VERSION, GOOD)
    if built is None:
        pytest.skip(mutantparts.not_built_line(SPEC, VERSION, GOOD))
    patches = tmp_path / "mutants" / f"{SPEC.name}-{VERSION}"
    patches.mkdir(parents=True)
    shutil.copyfile(REPO_ROOT / "mutants" / patches.name / f"{GOOD}.patch", patches / f"{GOOD}.patch")
    monkeypatch.setattr(mutantparts, "MUTANTS_DIR", tmp_path / "mutants")
    monkeypatch.setattr(mutantparts, "cache_root", lambda: tmp_path / "cache")
    copy = mutant_path(SPEC, VERSION, GOOD)
    copy.parent.mkdir(parents=True)
    for path in (built, built.with_name(built.name + ".inputs.sha256")):
        shutil.copy2(path, copy.parent / path.name)
    return patches


def test_a_patch_that_does_not_apply_is_one_line_naming_the_part_and_the_target(mutants_dir: Path) -> None:
    (mutants_dir / "stale.patch").write_text(NOT_APPLYING)

    with pytest.raises(HarnessError) as err:
        ensure_mutant(SPEC, VERSION, "stale")

    line = str(err.value)
    assert "\n" not in line
    assert line.startswith("example driver v0.4.0 mutant stale: stale.patch does not apply (make mutants): ")
    assert "FAILED" in line  # patch's own word for the hunk it could not place
    assert mutant_built(SPEC, VERSION, "stale") is None
    assert not (mutant_path(SPEC, VERSION, "stale").parent / "src").exists()  # the copy is removed


def test_a_mutant_that_does_not_build_fails_alone_and_the_others_still_build(mutants_dir: Path) -> None:
    (mutants_dir / "broken.patch").write_text(NOT_COMPILING)
    (mutants_dir / "stale.patch").write_text(NOT_APPLYING)
    assert mutant_names(SPEC, VERSION) == ["broken", "stale", GOOD]

    outcomes = {o.part: o for o in build_parts(mutant_parts(["example@v0.4.0"]), progress=lambda _: None)}

    broken = outcomes["example driver v0.4.0 mutant broken"].error
    assert broken.startswith("example driver v0.4.0 mutant broken: the build failed (make mutants): ")
    assert broken.endswith("checkpoint.go:20:1: syntax error: imports must appear before other declarations")
    assert "\n" not in broken
    assert outcomes["example driver v0.4.0 mutant stale"].error.startswith(
        "example driver v0.4.0 mutant stale: stale.patch does not apply (make mutants)"
    )
    good = outcomes[f"example driver v0.4.0 mutant {GOOD}"]
    assert (good.error, good.cached) == ("", True)
    assert mutant_built(SPEC, VERSION, "broken") is None


def test_an_unknown_mutant_is_refused_naming_the_known_ones(mutants_dir: Path) -> None:
    with pytest.raises(HarnessError, match=rf"^no mutant 'nope' of example@v0.4.0 in .*; known: {GOOD}$"):
        ensure_mutant(SPEC, VERSION, "nope")
