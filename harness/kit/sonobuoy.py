"""Sonobuoy's plugin contract as far as a running plugin sees it (vmware-tanzu/sonobuoy v0.57.5):
results go to $SONOBUOY_RESULTS_DIR (then `done` names them: harness.qualify.report), and
progress is POSTed as JSON to http://localhost:$SONOBUOY_PROGRESS_PORT/progress
(pkg/plugin/interface.go ProgressUpdate: name, node, timestamp, msg, total, completed,
errors, failures), which the worker relays to the aggregator.

Posting is best effort: bounded by POST_TIMEOUT, and a failure is one line on stderr after
which this process posts no more (a missing endpoint must not slow every test by the bound).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence

RESULTS_DIR_ENV = "SONOBUOY_RESULTS_DIR"
PROGRESS_PORT_ENV = "SONOBUOY_PROGRESS_PORT"
PLUGIN_NAME = "dra-qualify"
POST_TIMEOUT = 2.0

# The worker is in the pod: never through a proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_given_up: list[str] = []  # the failure that stopped this process's posts


def results_dir(env: Mapping[str, str] | None = None) -> str:
    """$SONOBUOY_RESULTS_DIR, or '' outside a Sonobuoy plugin."""
    return (os.environ if env is None else env).get(RESULTS_DIR_ENV, "")


def progress_update(msg: str, completed: int, total: int, failures: Sequence[str] = ()) -> dict[str, object]:
    return {
        "name": PLUGIN_NAME,
        "node": os.environ.get("NODE_NAME", "global"),  # a Job plugin's results are "global"
        "timestamp": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "msg": msg,
        "total": total,
        "completed": completed,
        "errors": [],
        "failures": list(failures),
    }


def post_progress(
    msg: str, completed: int, total: int, failures: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> bool:
    """POST one update when $SONOBUOY_PROGRESS_PORT is set; True if the worker took it."""
    port = (os.environ if env is None else env).get(PROGRESS_PORT_ENV, "")
    if not port or _given_up:
        return False
    url = f"http://localhost:{port}/progress"
    body = json.dumps(progress_update(msg, completed, total, failures)).encode()
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with _DIRECT.open(request, timeout=POST_TIMEOUT) as resp:
            resp.read()
        return True
    except (urllib.error.URLError, OSError, ValueError) as err:
        _given_up.append(str(err))
        print(f"dra-harness: Sonobuoy progress not posted to {url} ({err}); no more will be", file=sys.stderr)
        return False
