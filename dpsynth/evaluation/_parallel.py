"""Run independent model fits through an executor (performance only: results never depend on it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["run_tasks"]


class _Star:
    """``fn(*args)`` as a one-argument job (picklable, unlike a lambda, so it reaches worker processes)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    def __call__(self, args: tuple) -> Any:
        return self.fn(*args)


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], executor: Any = 2) -> list[Any]:
    """``[fn(*t) for t in tasks]`` through :func:`dpsynth.executor.get_executor` (``executor``: a worker count,
    ``"local"``, ``"sequential"`` or an object with ``.map``). Each worker runs one thread: with OpenMP models
    (XGBoost) on a shared 2-core machine, one thread per process is several times faster than two per fit."""
    from dpsynth.executor import get_executor

    if len(tasks) <= 1:
        return [fn(*t) for t in tasks]
    return get_executor(executor).map(_Star(fn), list(tasks))
