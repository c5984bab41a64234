"""suites/node/test_container_view.py: a failed read of the kubelet's DRA call counts fails
the test with the error (it was a silent skip, and node-side stayed PASS)."""

from __future__ import annotations

import pytest
from urllib3.exceptions import HTTPError

from harness.kit.kube import Kube
from suites.node.test_container_view import _calls, _settled_calls

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
