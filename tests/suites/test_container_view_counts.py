"""suites/node/test_container_view.py: a failed read of the kubelet's DRA call counts fails
the test with the error (it was a silent skip, and node-side stayed PASS); what failed since a
test's start is named by the driver's gRPC status and the kubelet's operation, counted only when
it grew."""

from __future__ import annotations

import pytest
from urllib3.exceptions import HTTPError

from harness.kit.kube import Kube
from suites.node.test_container_view import _calls, _counts, _failures, _settled_calls

METRICS = (
    'dra_grpc_operations_duration_seconds_count{driver_name="gpu.acme.example",'
    'grpc_status_code="OK",method_name="/v1.DRAPlugin/NodePrepareResources"} 2\n'
)


class _Kubelet:
    """What _calls asks of Kube: one GET of the node proxy's /metrics."""

    def __init__(self, answer: tuple[int, str] | Exception) -> None:
        self.answer = answer

    def raw_get(self, path: str) -> tuple[int, str]:
        assert path == "/api/v1/nodes/node-a/proxy/metrics"
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _kube(answer: tuple[int, str] | Exception) -> Kube:
    return _Kubelet(answer)  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            (403, "nodes/proxy is forbidden"),
            "metrics of the kubelet on node-a: HTTP 403: nodes/proxy is forbidden",
        ),
        (HTTPError("connection refused"), "connection refused"),
    ],
)
def test_a_failed_read_fails_with_the_error(answer: tuple[int, str] | Exception, said: str) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        _calls(_kube(answer), "node-a", "gpu.acme.example")
    assert str(failed.value) == f"reading the kubelet's DRA call counts on node-a: {said}"
    with pytest.raises(pytest.fail.Exception):
        _settled_calls(_kube(answer), "node-a", "gpu.acme.example")


def test_a_read_counts_the_drivers_calls() -> None:
    assert _calls(_kube((200, METRICS)), "node-a", "gpu.acme.example") == {("NodePrepareResources", "OK"): 2}


# A Prepare that outlasted the kubelet's timeout (its gRPC status) and an Unprepare the plugin
# answered OK with an error for the claim (the kubelet's operation), as /metrics has them.
FAILURES = (
    'dra_grpc_operations_duration_seconds_count{driver_name="gpu.acme.example",'
    'grpc_status_code="DeadlineExceeded",method_name="/v1.DRAPlugin/NodePrepareResources"} {prepare}\n'
    'dra_grpc_operations_duration_seconds_count{driver_name="gpu.other.example",'
    'grpc_status_code="Unavailable",method_name="/v1.DRAPlugin/NodePrepareResources"} 7\n'
    'dra_operations_duration_seconds_count{is_error="true",operation_name="UnprepareResources"} {unprepare}\n'
    'dra_operations_duration_seconds_count{is_error="false",operation_name="PrepareResources"} 9\n'
)


def test_failures_name_what_failed_since_the_start_and_only_that() -> None:
    start = _kube((200, FAILURES.replace("{prepare}", "1").replace("{unprepare}", "0")))
    before = _counts(start, "node-a", "gpu.acme.example")
    later = _kube((200, FAILURES.replace("{prepare}", "1").replace("{unprepare}", "3")))
    assert _failures(later, "node-a", "gpu.acme.example", before) == ["3 UnprepareResources with an error"]
    assert _failures(start, "node-a", "gpu.acme.example", ({}, {})) == [
        "1 NodePrepareResources DeadlineExceeded"
    ]
