"""versions.toml parsing: the real file loads; broken ones fail with one precise line."""

from __future__ import annotations

import pytest

from fake_driver.facts.personalities import DEFAULT_PERSONALITY, PERSONALITIES
from harness.core.errors import HarnessError
from harness.core.versions import VERSIONS_FILE, VersionsError, load_matrix, parse_matrix, release_label
from harness.reports.summary import personality_provenance

GOOD = """
default_minor = "1.37"
default_profile = "dra-all"
default_personality = "nvidia-v25.12"
[kind]
version = "v0.33.0"
[kwok]
module = "sigs.k8s.io/kwok"
version = "v0.8.0"
[minors."1.37"]
kubernetes = "v1.37.2"
staging = "v0.37.2"
kind_image = "kindest/node:v1.37.0"
resource_api = "v1"
[minors."1.37".profiles.dra-all]
gates = { GenericWorkload = true }
runtime_config = { "scheduling.k8s.io/v1beta1" = "true" }
"""


def test_the_repository_matrix_covers_1_34_to_1_38_with_both_profiles() -> None:
    matrix = load_matrix()
    assert list(matrix.minors) == ["1.34", "1.35", "1.36", "1.37", "1.38"]
    releases = [m.kubernetes for m in matrix.minors.values()]
    assert releases == ["v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2", "v1.38.0-beta.0"]
    stagings = [m.staging for m in matrix.minors.values()]
    assert stagings == ["v0.34.4", "v0.35.4", "v0.36.3", "v0.37.2", "v0.38.0-beta.0"]
    assert all(set(m.profiles) == {"defaults", "dra-all"} for m in matrix.minors.values())
    # 1.38 is not released: the default stays on 1.37.
    assert (matrix.default_minor, matrix.default_profile) == ("1.37", "dra-all")


def test_the_fake_drivers_own_default_personality_is_the_repositorys() -> None:
    assert load_matrix().default_personality == DEFAULT_PERSONALITY


def test_only_1_38_builds_with_a_go_toolchain_of_its_own() -> None:
    toolchains = {m.name: m.go_toolchain for m in load_matrix().minors.values()}
    assert toolchains == {"1.34": "", "1.35": "", "1.36": "", "1.37": "", "1.38": "go1.27.3"}


def test_a_go_toolchain_that_is_not_a_go_release_is_refused() -> None:
    bad = GOOD.replace('staging = "v0.37.2"', 'staging = "v0.37.2"\ngo_toolchain = "1.27"')
    with pytest.raises(VersionsError) as err:
        parse_matrix(bad)
    assert str(err.value) == (
        "versions.toml: minors.'1.37': go_toolchain '1.27' is not a Go release like \"go1.27.3\""
    )


def test_defaults_profile_enables_nothing_beyond_the_release() -> None:
    for minor in load_matrix().minors.values():
        assert minor.profile("defaults").gates == {}
        assert minor.profile("defaults").runtime_config == {}


def test_flags_are_rendered_sorted() -> None:
    profile = parse_matrix(GOOD).minor("1.37").profile("dra-all")
    assert profile.feature_gates_flag() == "GenericWorkload=true"
    assert profile.runtime_config_flag() == "scheduling.k8s.io/v1beta1=true"


@pytest.mark.parametrize("name", ["1.37", "v1.37", "1.37.2", "v1.37.2"])
def test_a_minor_can_be_named_by_release(name: str) -> None:
    assert parse_matrix(GOOD).minor(name).name == "1.37"


def test_unknown_version_lists_the_valid_ones() -> None:
    with pytest.raises(VersionsError, match=r"^unknown Kubernetes version '1.99'; valid: 1.37$"):
        parse_matrix(GOOD).minor("1.99")


def test_unknown_profile_lists_the_valid_ones() -> None:
    with pytest.raises(VersionsError, match=r"^unknown gate profile 'all' for 1.37; valid: dra-all$"):
        parse_matrix(GOOD).minor("1.37").profile("all")


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (GOOD.replace('[kind]\nversion = "v0.33.0"', "[kind"), r"^versions.toml is not valid TOML: "),
        (GOOD.replace('staging = "v0.37.2"', 'staging = "v0.36.3"'), r"do not match 1.37$"),
        (
            GOOD.replace('kubernetes = "v1.37.2"', "kubernetes = 137"),
            r"kubernetes must be a string, got 137$",
        ),
        (
            GOOD.replace("GenericWorkload = true", 'GenericWorkload = "yes"'),
            r"gates must map gate names to true/false$",
        ),
        (
            GOOD.replace('"scheduling.k8s.io/v1beta1" = "true"', '"x" = true'),
            r"runtime_config values must be strings$",
        ),
        (
            GOOD.replace('default_minor = "1.37"', 'default_minor = "1.30"'),
            r"unknown Kubernetes version '1.30'",
        ),
        (
            GOOD.replace('[minors."1.37"]', '[minors."latest"]').replace(
                '[minors."1.37".', '[minors."latest".'
            ),
            r'a minor is named like "1.37"$',
        ),
        (GOOD.split("[minors")[0], r"\[minors\] must be a table$"),
    ],
    ids=[
        "toml-syntax",
        "staging-mismatch",
        "wrong-type",
        "gate-not-bool",
        "runtime-not-str",
        "bad-default",
        "bad-minor-name",
        "no-minors",
    ],
)
def test_malformed_matrix_fails_with_one_line(broken: str, message: str) -> None:
    with pytest.raises(VersionsError, match=message) as err:
        parse_matrix(broken)
    assert isinstance(err.value, HarnessError)
    assert "\n" not in str(err.value)


def test_the_tools_are_pinned_go_commands() -> None:
    tools = load_matrix().tools
    assert {n: (t.module, t.version) for n, t in tools.items()} == {
        "helm": ("helm.sh/helm/v4/cmd/helm", "v4.3.2"),
        "actionlint": ("github.com/rhysd/actionlint/cmd/actionlint", "v1.7.12"),
        "krew": ("sigs.k8s.io/krew/cmd/krew", "v0.4.3"),
        "validate-krew-manifest": ("sigs.k8s.io/krew/cmd/validate-krew-manifest", "v0.4.3"),
    }


def test_a_tool_whose_module_builds_another_command_is_refused_with_one_line() -> None:
    bad = GOOD + '\n[tools.helm]\nmodule = "helm.sh/helm/v4/cmd/helmx"\nversion = "v4.3.2"\n'
    with pytest.raises(VersionsError) as err:
        parse_matrix(bad)
    assert str(err.value) == (
        "versions.toml: [tools.helm]: module helm.sh/helm/v4/cmd/helmx builds 'helmx', not 'helm'"
    )
    with pytest.raises(VersionsError) as err:
        parse_matrix(GOOD).tool("helm")
    assert str(err.value) == "versions.toml [tools] has no 'helm'; it has none"


def test_every_personality_says_how_it_was_checked_from_one_place() -> None:
    """fake_driver.facts.personalities' provenance, which reports print (harness.reports.summary):
    the ones compared with a running plugin on real nodes name its release; the v25.x ones were
    never run here (the module proxy serves none of them)."""
    assert {name: p.provenance for name, p in PERSONALITIES.items()} == {
        "nvidia-v25.3": "from source reading at v25.3.2, not compared with a running plugin",
        "nvidia-v25.8": "from source reading at v25.8.1, not compared with a running plugin",
        "nvidia-v25.12": "from source reading at v25.12.0, not compared with a running plugin",
        "nvidia-v0.4": "compared with the real plugin v0.4.1",
        "nvidia-v0.5": "compared with the real plugin v0.5.0",
        "example-v0.4": "compared with the real plugin v0.4.0",
    }
    assert personality_provenance(DEFAULT_PERSONALITY) == "compared with the real plugin v0.5.0"
    assert personality_provenance("nvidia-v9") == ""


@pytest.mark.parametrize(
    ("version", "label"),
    [
        ("v1.38.0-beta.0", "v1.38.0-beta.0, pre-release"),
        ("v1.38.0-rc.1", "v1.38.0-rc.1, pre-release"),
        ("v1.38.0-alpha.3", "v1.38.0-alpha.3, pre-release"),
        ("v1.38.0", "v1.38.0"),
        ("v1.37.2", "v1.37.2"),
        # a provider's build suffix is a release, not a pre-release
        ("v1.30.4-eks-a737599", "v1.30.4-eks-a737599"),
        ("v1.30.5-gke.1014001", "v1.30.5-gke.1014001"),
        # a header never shows an empty gap ("Kubernetes ;")
        ("", "version unknown"),
        ("  ", "version unknown"),
    ],
)
def test_a_report_calls_a_build_pre_release_from_its_version_alone(version: str, label: str) -> None:
    assert release_label(version) == label


def test_the_pre_release_label_follows_the_1_38_pin() -> None:
    m138 = load_matrix().minor("1.38")
    assert m138.release == "v1.38.0-beta.0, pre-release"  # the pin on 2026-12-07
    # the bump to the release is versions.toml's one line: the label follows it
    bumped = parse_matrix(VERSIONS_FILE.read_text().replace('"v1.38.0-beta.0"', '"v1.38.0"', 1))
    assert bumped.minor("1.38").kubernetes == "v1.38.0"
    assert bumped.minor("1.38").release == "v1.38.0"
    assert load_matrix().minor("1.37").release == "v1.37.2"
