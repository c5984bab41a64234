"""Kubernetes API clients that cannot hang, and one line for every way a server fails them.

The official client sends requests with no timeout at all: a server that accepts TCP and
never answers holds its caller forever. ``BoundedApiClient`` gives every request a connect
and a read bound (a watch's read bound is above its server-side timeoutSeconds) and a
deadline for the whole request (fake_driver.api.deadline: a server answering one byte at a time
is cut off too; a watch's deadline ends with its set-up), and ``describe_failure`` turns what
the client raises into one line naming the server. The kubeconfig's exec credential plugin
runs with a bound (EXEC_TIMEOUT), and the certificates and keys the client writes out of a
kubeconfig go into a private directory of this process (fake_driver.api.keydir).
The harness uses both with its own bound (harness.kit.waits.TIMEOUTS.api_request).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from types import SimpleNamespace, TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config import exec_provider
from kubernetes.config.config_exception import ConfigException
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
)
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from fake_driver.api import deadline, keydir
from fake_driver.api.kubeconfig import check_kubeconfig
from fake_driver.core.errors import ClusterError, KubeconfigError

# The fake driver's bound on connecting (TCP and TLS) and on waiting for an answer, each:
# far above what a healthy API server takes, well below the 30 s in which a CLI must fail.
API_TIMEOUT = 15.0
# A watch without timeoutSeconds: the API server ends it within 2x --min-request-timeout (1800 s).
WATCH_LIMIT = 3600.0
# An exec credential plugin (aws eks get-token, gke-gcloud-auth-plugin, ...) takes seconds;
# one that has not printed its credential by then is killed, with everything it started.
EXEC_TIMEOUT = 20.0
API_ERRORS = (ApiException, HTTPError)


def request_timeout(url: str, bound: float) -> tuple[float, float]:
    """(connect, read) for one request; a watch may stay silent until its own timeout."""
    query = parse_qs(urlsplit(url).query)
    if not streams(url):
        return bound, bound
    seconds = query.get("timeoutSeconds", [""])[0]
    return bound, (float(seconds) if seconds.isdigit() else WATCH_LIMIT) + bound


def streams(url: str) -> bool:
    """A watch (or a followed log): its answer is a stream, read as it comes."""
    query = parse_qs(urlsplit(url).query)
    return any(query.get(key, [""])[0] in ("true", "1") for key in ("watch", "follow"))


class _TimeoutsAreFinal(Retry):
    """urllib3's default retries, but a request that timed out is not sent again: the bound
    holds per call, not four times over."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        # NewConnectionError (refused) counts as a connect timeout to urllib3; it is not one.
        timed_out = isinstance(error, ConnectTimeoutError | ReadTimeoutError)
        timed_out |= bool((bound := deadline.current()) and bound.expired)
        retries = self.new(total=0) if timed_out and not isinstance(error, NewConnectionError) else self
        return Retry.increment(retries, method, url, response, error, _pool, _stacktrace)


class BoundedApiClient(client.ApiClient):
    """An ApiClient whose every request (typed APIs, dynamic client, discovery, raw calls)
    has a connect and a read timeout, unless the caller passes its own, and ends within
    `timeout` in all (a stream: its set-up)."""

    def __init__(self, configuration: Any, timeout: float) -> None:
        configuration.retries = _TimeoutsAreFinal(3)  # read when the pool is built, below
        super().__init__(configuration)
        deadline.bounded_pools(self.rest_client.pool_manager)
        self.timeout = timeout

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        bound = _request_timeout or request_timeout(url, self.timeout)
        # A stream (a watch) may stay silent for its timeoutSeconds before its first byte.
        with deadline.deadline(request_timeout(url, self.timeout)[1]) as whole:
            try:
                response = super().call_api(
                    method, url, header_params, body, post_params, _request_timeout=bound
                )
                if not streams(url):
                    response.read()  # type: ignore[no-untyped-call]  # the last byte, in time too
            except Exception:
                if whole.expired:  # the watchdog cut the connection: a timeout, said as one
                    raise self._late(url) from None
                raise
            if whole.expired:  # cut inside the headers, which then seemed to end: not an answer
                raise self._late(url)
        return response

    def _late(self, url: str) -> ReadTimeoutError:
        return ReadTimeoutError(None, url, "no complete answer within the request's deadline")  # type: ignore[arg-type]


def new_api_client(
    kubeconfig: str | os.PathLike[str] | None,
    context: str | None = None,
    timeout: float = API_TIMEOUT,
    pool_size: int | None = None,
) -> BoundedApiClient:
    """A bounded client from a kubeconfig checked first; KubeconfigError is one line."""
    checked = check_kubeconfig(kubeconfig, context)
    cfg = client.Configuration()
    try:
        keys = keydir.private_dir()
    except OSError as err:
        raise KubeconfigError(f"cannot make a private directory for the kubeconfig's keys: {err}") from None
    _loading.active = True
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=checked.where, context=context, client_configuration=cfg, temp_file_path=keys
        )
    except (Exception, _ExecTimedOut) as err:  # the package raises bare exceptions for config problems
        raise KubeconfigError(f"cannot use kubeconfig {checked.where}: {_one_line(err)}") from None
    finally:
        _loading.active = False
    if pool_size:
        cfg.connection_pool_maxsize = pool_size
    return BoundedApiClient(cfg, timeout)


class _BoundedPopen(subprocess.Popen[str]):
    """An exec credential plugin: in a process group of its own unless it talks to the user's
    terminal, and killed (with its group) when it has given no credential within EXEC_TIMEOUT."""

    def __init__(self, args: Any, **kwargs: Any) -> None:
        self.own_group = not kwargs.get("stdin")
        super().__init__(args, process_group=0 if self.own_group else None, **kwargs)

    def communicate(self, input: str | None = None, timeout: float | None = None) -> tuple[str, str]:
        try:
            return super().communicate(input, EXEC_TIMEOUT if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                if self.own_group:
                    os.killpg(self.pid, signal.SIGKILL)
                else:
                    self.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # a grandchild may hold the pipes
                super().communicate(timeout=1.0)
            self.wait()
            command = self.args[0] if isinstance(self.args, list) else self.args
            message = f"the exec credential plugin {command!s} gave no credential within {EXEC_TIMEOUT:g} s"
            # The client logs any Exception of a plugin and goes on without credentials.
            raise (_ExecTimedOut if getattr(_loading, "active", False) else ConfigException)(
                message
            ) from None


class _ExecTimedOut(BaseException):
    """Past the client's `except Exception`, to new_api_client, which makes it one line."""


_loading = threading.local()  # .active: new_api_client is loading a kubeconfig in this thread


# The client runs exec plugins with no timeout, through its module's `subprocess`: this one.
setattr(exec_provider, "subprocess", SimpleNamespace(Popen=_BoundedPopen, PIPE=subprocess.PIPE))  # noqa: B010


def in_cluster_api_client(timeout: float = API_TIMEOUT) -> BoundedApiClient:
    """A bounded client from the pod's service account."""
    cfg = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except Exception as err:  # ConfigException, or a token file that cannot be read
        raise ClusterError(f"cannot use the in-cluster config: {_one_line(err)}") from None
    return BoundedApiClient(cfg, timeout)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def status_message(body: str | bytes | None) -> str:
    """The message of a Kubernetes Status body, else the body itself, on one line."""
    try:
        data = json.loads(body or b"{}")
    except (ValueError, TypeError):
        data = None
    if isinstance(data, dict) and data.get("message"):
        return _one_line(data["message"])
    return _one_line(body.decode("utf-8", "replace") if isinstance(body, bytes) else body or "")


def describe_status(server: str, status: int, body: str | bytes | None, what: str = "the request") -> str:
    """One line for an answer that refuses the caller (401, 403) or fails otherwise."""
    if status == 401:
        return f"the API server {server} rejected the credentials (401 Unauthorized)"
    if status == 403:
        return f"the API server {server} refused {what} as forbidden (403): {status_message(body)}"
    return f"the API server {server} answered {what} with {status}: {status_message(body)}"


def describe_failure(err: Exception, api_client: Any, what: str = "the request") -> str:
    """One line for an ApiException or a urllib3 error of this client's: the server is silent
    (past the client's bound), unreachable, or refuses `what`."""
    server = str(api_client.configuration.host)
    timeout = getattr(api_client, "timeout", API_TIMEOUT)
    if isinstance(err, ApiException) and err.status:
        return describe_status(server, int(err.status), err.body, what)
    if isinstance(err, ApiException):  # status 0: the client wraps TLS failures so
        return f"cannot reach the API server {server}: {_one_line(err.reason)}"
    reason = err.reason if isinstance(err, MaxRetryError) else err
    if isinstance(reason, NewConnectionError) and isinstance(reason.__cause__, OSError):
        cause = reason.__cause__.strerror or str(reason.__cause__)
        return f"cannot reach the API server {server}: {cause[:1].lower()}{cause[1:]}"
    if isinstance(reason, ConnectTimeoutError | ReadTimeoutError):
        return f"the API server {server} did not answer within {timeout:g} s"
    return f"cannot reach the API server {server}: {_one_line(reason)}"
