"""The real-vs-fake slice comparison names each differing field with both values."""

from __future__ import annotations

from typing import Any

from tests.fake_driver.slicediff import matches, slice_differences


def _slice(*devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"generateName": "00000-d-n-"},
        "spec": {"driver": "d", "devices": list(devices), **spec},
    }


def _gpu(name: str = "gpu-0", **attrs: Any) -> dict[str, Any]:
    return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": "80Gi"}}}


def test_equal_pools_have_no_differences() -> None:
    assert slice_differences([_slice(_gpu(index={"int": 0}))], [_slice(_gpu(index={"int": 0}))]) == []


def test_each_differing_field_is_one_line_with_its_path_and_both_values() -> None:
    real = [_slice(_gpu(index={"int": 0}), _gpu("gpu-1"), pool={"name": "n", "generation": 1})]
    fake = [_slice(_gpu(index={"string": "0"}), pool={"name": "n", "generation": 2}), _slice()]
    assert [str(d) for d in slice_differences(real, fake)] == [
        "slice0.spec.devices.gpu-0.attributes.index.type: real 'int', fake 'string'",
        "slice0.spec.devices.gpu-0.attributes.index.value: real 0, fake '0'",
        "slice0.spec.devices.gpu-1: real {'capacity': {'memory': {'value': '80Gi'}}, 'attributes': {}}, "
        "fake '<absent>'",
        "slice0.spec.pool.generation: real 1, fake 2",
        "slice1: real '<absent>', fake {'metadata': {'generateName': '00000-d-n-', 'labels': {}, "
        "'annotations': {}, 'ownerReferences': []}, 'spec': {'driver': 'd', 'devices': {}}}",
    ]


def test_counters_are_compared_by_counter_set() -> None:
    consumes = [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]
    real = [_slice({**_gpu(), "consumesCounters": consumes})]
    fake = [
        _slice({**_gpu(), "consumesCounters": [{**consumes[0], "counters": {"memory": {"value": "4Gi"}}}]})
    ]
    [d] = slice_differences(real, fake)
    assert d.path == (
        "slice0",
        "spec",
        "devices",
        "gpu-0",
        "consumesCounters",
        "gpu-0-counters",
        "memory",
        "value",
    )


def test_allow_list_patterns_match_by_prefix_with_wildcard_segments() -> None:
    assert matches(("slice1", "metadata", "labels", "x"), ("*", "metadata", "labels"))
    assert not matches(("slice1", "metadata"), ("*", "metadata", "labels"))
    assert not matches(("slice1", "spec", "labels"), ("*", "metadata", "labels"))
