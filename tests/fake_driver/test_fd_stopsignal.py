"""fake_driver.core.stopsignal: a long-running command stops on SIGTERM wherever the kernel delivers it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from fake_driver.core.stopsignal import StopSignal
from harness.core.versions import REPO_ROOT

# SIGTERM sent to a thread other than the main one: the C handler runs there, and a main
# thread blocked in `Event.wait()` without a timeout never ran the Python handler (the hang
# behind a kubelet-plugin process that ignored SIGTERM in CI).
OTHER_THREAD_SIGTERM = textwrap.dedent(
    """
    import signal, threading
    from pathlib import Path
    from fake_driver.core.stopsignal import StopSignal
    from harness.kit.waits import wait_for

    main = threading.get_native_id()

    def kill_once_main_sleeps() -> None:
        stat = Path(f"/proc/self/task/{main}/stat")
        state = lambda: stat.read_text().rsplit(")", 1)[1].split()[0]
        wait_for(lambda: state() == "S", timeout=20, describe="main thread blocked")
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    stop = StopSignal().install()
    threading.Thread(target=kill_once_main_sleeps).start()
    print("stopped" if stop.wait(None) else "not stopped", flush=True)
    """
)


def test_sigterm_delivered_to_another_thread_stops_a_wait_without_timeout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", OTHER_THREAD_SIGTERM],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "stopped\n", "")


def test_wait_returns_false_when_the_timeout_passes_first() -> None:
    started = time.monotonic()
    assert StopSignal().wait(0.3) is False
    assert 0.3 <= time.monotonic() - started < 5


def test_the_callers_event_stops_a_wait_from_another_thread() -> None:
    event = threading.Event()
    stop = StopSignal(event)
    threading.Timer(0.1, event.set).start()
    assert stop.wait(30) is True
    assert stop.is_set()
