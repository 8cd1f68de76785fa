"""Run independent model fits in worker processes (performance only: results do not depend on n_jobs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["run_tasks"]


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], n_jobs: int) -> list[Any]:
    """``[fn(*t) for t in tasks]``, spread over ``n_jobs`` processes when ``n_jobs > 1``.

    Each fit runs single-threaded: with OpenMP models (XGBoost) on a shared 2-core machine, one thread per
    process is several times faster than two threads per fit (spin-waiting under contention).
    """
    if n_jobs <= 1 or len(tasks) <= 1:
        return [fn(*t) for t in tasks]
    import os

    from joblib import Parallel, delayed

    from dpsynth._workers import run_in_worker  # workers exit if this process is killed

    parent = os.getpid()
    return Parallel(n_jobs=min(n_jobs, len(tasks)), backend="loky")(
        delayed(run_in_worker)(parent, fn, *t) for t in tasks)
