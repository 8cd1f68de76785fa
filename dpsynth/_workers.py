"""Worker processes die with their parent.

joblib's loky workers outlive a parent killed with SIGKILL (nothing runs in the parent to stop them), holding
hundreds of MB each. Every job sent to a worker therefore goes through :func:`run_in_worker`, which starts (once
per worker) a daemon thread that checks every second whether the parent is still there and ends the worker when
it is not. The check is that the worker's parent pid changed (the orphan was re-parented) or that the parent pid
no longer exists; it never runs in the calling process itself (a job run in-process is left alone).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["run_in_worker", "watch_parent"]

POLL_SECONDS = 1.0
_watching: int | None = None
_lock = threading.Lock()


def _parent_gone(parent_pid: int, original_ppid: int) -> bool:
    if os.getppid() != original_ppid:  # re-parented: the process that started us has exited
        return True
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # the pid now belongs to another user's process: reused, our parent is gone
        return True
    return False


def watch_parent(parent_pid: int) -> None:
    """In a worker: exit (status 1, no cleanup that could block) soon after ``parent_pid`` is gone."""
    global _watching
    if parent_pid == os.getpid():
        return  # running in the caller itself
    with _lock:
        if _watching == parent_pid:
            return
        _watching = parent_pid
    original_ppid = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(POLL_SECONDS)
            if _parent_gone(parent_pid, original_ppid):
                os._exit(1)

    threading.Thread(target=watch, name="dpsynth-parent-watch", daemon=True).start()


def run_in_worker(parent_pid: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker that exits when ``parent_pid`` does."""
    watch_parent(parent_pid)
    return fn(*args)
