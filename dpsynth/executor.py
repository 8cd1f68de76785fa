"""Pluggable executors for embarrassingly parallel jobs: the one parallel-execution API of dpsynth (``executor=``
of :func:`dpsynth.evaluate`, :func:`dpsynth.assess_risk`, the shadow attack and the audits).

An executor is any object with ``map(fn, items, *, desc="", progress=False) -> list`` that returns
``[fn(x) for x in items]`` in order. Two are built in: :class:`LocalExecutor` (worker processes through
joblib's loky backend; the default, 2 workers because the reference machine has 2 cores) and
:class:`SequentialExecutor` (in-process, for debugging and tiny jobs). Cluster executors (Dask, Ray) only
need the same ``map``. Executors are performance settings: they never change a result (each job carries
its own seed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from dpsynth.errors import InputError

__all__ = ["DEFAULT_WORKERS", "Executor", "LocalExecutor", "SequentialExecutor", "get_executor"]

DEFAULT_WORKERS = 2


@runtime_checkable
class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "",
            progress: bool = False) -> list[Any]:
        ...


def _bar(total: int, desc: str, progress: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc or "jobs", disable=not progress, leave=False)


class SequentialExecutor:
    """Run jobs one after the other in this process."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "",
            progress: bool = False) -> list[Any]:
        items = list(items)
        out = []
        with _bar(len(items), desc, progress) as bar:
            for x in items:
                out.append(fn(x))
                bar.update(1)
        return out

    def __repr__(self) -> str:
        return "SequentialExecutor()"


def _init_worker() -> None:
    # one BLAS / torch thread per worker: the workers already use every core we were given
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch

        torch.set_num_threads(1)
    except Exception:  # noqa: BLE001 - torch is optional for a job
        pass


def _indexed(fn: Callable[[Any], Any], i: int, x: Any, parent: int) -> tuple[int, Any]:
    """Run one job in a worker; the index lets results arriving in any order go back to their place. The worker
    exits soon after ``parent`` (the calling process) is gone, even when it was killed with SIGKILL."""
    from dpsynth._workers import watch_parent

    watch_parent(parent)
    _init_worker()
    return i, fn(x)


class LocalExecutor:
    """Worker processes on this machine (joblib's loky backend).

    loky starts fresh interpreters (safe with torch's threads) and, unlike multiprocessing's 'spawn', does not
    re-run the calling script in each worker: a script without an ``if __name__ == "__main__":`` guard works
    (multiprocessing re-ran such a script's top level in every worker, which then died: BrokenProcessPool).
    ``fn`` and the items are serialised by joblib to reach the workers (our own jobs between our own processes;
    model files never go this way: they are safetensors + JSON). With ``max_workers=1`` jobs run in-process. Each
    worker runs one torch / BLAS thread: the workers already use every core they were given.
    """

    def __init__(self, max_workers: int = DEFAULT_WORKERS) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise InputError(f"max_workers must be a positive integer. Found {max_workers!r}.")
        self.max_workers = max_workers

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, desc: str = "",
            progress: bool = False) -> list[Any]:
        items = list(items)
        if self.max_workers == 1 or len(items) <= 1:
            return SequentialExecutor().map(fn, items, desc=desc, progress=progress)
        from joblib import Parallel, delayed

        out: list[Any] = [None] * len(items)
        parallel = Parallel(n_jobs=min(self.max_workers, len(items)), backend="loky",
                            return_as="generator_unordered")
        with _bar(len(items), desc, progress) as bar:
            parent = os.getpid()
            for i, value in parallel(delayed(_indexed)(fn, i, x, parent) for i, x in enumerate(items)):
                out[i] = value
                bar.update(1)
        return out

    def __repr__(self) -> str:
        return f"LocalExecutor(max_workers={self.max_workers})"


def get_executor(spec: Any = None) -> Executor:
    """``None``/"local" -> LocalExecutor(2); "sequential"; an int -> LocalExecutor(n); an executor as is."""
    if spec is None or spec == "local":
        return LocalExecutor()
    if spec == "sequential":
        return SequentialExecutor()
    if isinstance(spec, int) and not isinstance(spec, bool):
        return LocalExecutor(spec) if spec > 1 else SequentialExecutor()
    if isinstance(spec, Executor):
        return spec
    raise InputError(
        f"executor must be 'local', 'sequential', a worker count or an object with .map(). Found {spec!r}.")
