"""Run a benchmark grid: every pending run in its own process, results committed one run at a time (issue 22).

**Isolation.** Each run is ``python -m dpsynth.bench.worker`` in a fresh process (its own session, so a timeout
kills its whole process group), with an address-space limit of ``limits.memory_gb`` and a wall-clock limit of
``limits.time_s``. A run that fails, runs out of memory, is killed or times out is recorded with its status and
error; the grid goes on.

**Threads.** Two torch processes that each use every core slow each other down many times over (measured on 2
cores in ``benchmarks/bench_threads.py``), so each worker gets ``max(1, cores // workers)`` threads
(``OMP_NUM_THREADS`` and friends, read by torch, NumPy's BLAS and XGBoost at start-up) unless told otherwise.

**Executors.** ``local`` (default): ``workers`` runs at a time on this machine. ``ray``: each run is a Ray task
(``num_cpus`` = its thread count) that starts the same worker process on whichever node Ray places it, so a
cluster (``ray://host:10001``) runs the grid with the same limits; the driver still writes every result itself.
Either way results come back as they finish and are committed at once (:mod:`dpsynth.bench.store`).

**Interrupts.** Ctrl-C (or any error) in the driver kills the worker processes in flight, whose runs stay
unrecorded and run again next time. A driver killed with ``kill -9`` cannot clean up: its workers notice that their
parent is gone and exit within a second (:mod:`dpsynth.bench.worker`), and the next ``run_bench`` removes the
scratch directories (``dpsynth-bench-<driver pid>-*`` in the temp directory) of drivers that no longer run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpsynth.bench.spec import BenchSpec, Run
from dpsynth.bench.store import ResultStore
from dpsynth.errors import InputError

__all__ = ["execute", "kill_live_workers", "remove_stale_scratch", "run_bench", "threads_per_worker"]

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
_SCRATCH = "dpsynth-bench-"
#: the driver's main thread wakes at least this often (seconds) while runs are in flight, so Ctrl-C is acted on
_POLL_S = 0.5

# The worker processes this driver has running (each in its own session): killed on an interrupt.
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
# set by an interrupt: a worker process started after it (a thread between Popen and registering it) kills itself
_STOPPING = threading.Event()


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))


def execute(run_dict: dict[str, Any], limits: dict[str, float], threads: int,
            command: list[str] | None = None) -> dict[str, Any]:
    """Run one run (as a dict: picklable for Ray) in a worker process under ``limits``; return its result dict
    (always: failures are results). ``command`` replaces the worker command (tests)."""
    time_s, memory = float(limits["time_s"]), int(float(limits["memory_gb"]) * 2 ** 30)
    env = {**os.environ, **{name: str(threads) for name in _THREAD_VARS}, "DPSYNTH_BENCH_PARENT": str(os.getpid())}
    with tempfile.TemporaryDirectory(prefix=f"{_SCRATCH}{os.getpid()}-") as tmp:
        source, out, err = Path(tmp, "run.json"), Path(tmp, "result.json"), Path(tmp, "stderr.txt")
        source.write_text(json.dumps(run_dict))
        cmd = command or [sys.executable, "-m", "dpsynth.bench.worker", str(source), str(out)]

        def limit_memory() -> None:  # in the child, before exec
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        start = time.perf_counter()
        with open(err, "wb") as stderr:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                                    preexec_fn=limit_memory, start_new_session=True)
            with _LIVE_LOCK:
                _LIVE.add(proc)
                stopping = _STOPPING.is_set()
            try:
                if stopping:  # the interrupt came while this process was being started
                    raise KeyboardInterrupt
                proc.wait(timeout=time_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                return {"status": "timeout", "error": f"exceeded the time limit of {time_s:g} s",
                        "wall_s": time.perf_counter() - start}
            except BaseException:  # interrupted (Ctrl-C, a cancelled Ray task): the run dies with the driver
                _kill_group(proc)
                raise
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(proc)
        wall = time.perf_counter() - start
        if out.is_file():
            return {**json.loads(out.read_text()), "wall_s": wall}
        tail = [line for line in err.read_text(errors="replace").splitlines() if line.strip()]
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            return {"status": "failed", "error": f"worker killed by {name}", "wall_s": wall}
        if any("MemoryError" in line for line in tail[-5:]):
            return {"status": "memory", "error": f"exceeded the memory limit of {limits['memory_gb']:g} GB",
                    "wall_s": wall}
        return {"status": "failed", "error": (tail[-1] if tail else f"worker exited with {proc.returncode}")[:500],
                "wall_s": wall}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def kill_live_workers() -> int:
    """Kill every worker process this driver has running; return how many (the interrupt path)."""
    with _LIVE_LOCK:  # with the flag set under the lock, a process is either in _LIVE here or sees the flag
        _STOPPING.set()
        live = list(_LIVE)
    for proc in live:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(live)


def remove_stale_scratch(directory: str | Path | None = None) -> int:
    """Remove the scratch directories of benchmark drivers that no longer run (``kill -9``); return how many."""
    removed = 0
    for path in Path(directory or tempfile.gettempdir()).glob(f"{_SCRATCH}*-*"):
        pid = path.name[len(_SCRATCH):].split("-", 1)[0]
        if path.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _pending(spec: BenchSpec, store: ResultStore, retry_failed: bool) -> tuple[list[Run], int]:
    done = store.statuses()
    pending, seen = [], set()
    for run in spec.runs:
        status = done.get(run.key)
        if run.key in seen or status == "ok" or (status is not None and not retry_failed):
            continue
        seen.add(run.key)
        pending.append(run)
    return pending, len(spec.runs) - len(pending)


def run_bench(spec: BenchSpec, results: str | Path, *, workers: int = 1, executor: str = "local",
              retry_failed: bool = False, threads: int | None = None, progress: bool = True,
              echo: Callable[[str], None] = print) -> dict[str, int]:
    """Run every run of ``spec`` not yet in ``results``; return counts by status (plus ``skipped``).
    ``threads`` overrides the threads per worker (default: the cores shared out, :func:`threads_per_worker`)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a positive integer. Found {workers!r}.")
    if executor != "local" and executor != "ray" and not executor.startswith("ray://"):
        raise InputError(f"executor must be 'local', 'ray' or 'ray://host:port'. Found {executor!r}.")
    if threads is None:
        threads = threads_per_worker(workers)
    elif isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputError(f"threads must be a positive integer. Found {threads!r}.")
    remove_stale_scratch()
    _STOPPING.clear()
    with ResultStore(results) as store:
        pending, skipped = _pending(spec, store, retry_failed)
        counts = {"skipped": skipped}
        left_out = (f"; {spec.non_private_left_out} cell(s) of non-private models at a finite epsilon left out"
                    if spec.non_private_left_out else "")
        echo(f"{spec.name}: {len(spec.runs)} runs, {skipped} already recorded, {len(pending)} to run "
             f"({workers} at a time, {threads} thread(s) each, executor {executor}){left_out}")
        if not pending:
            return counts
        from tqdm.auto import tqdm

        finished = _ray_results if executor.startswith("ray") else _local_results
        with tqdm(total=len(pending), desc="bench", disable=not progress, leave=False) as bar:
            for i, (run, result) in enumerate(finished(pending, spec.limits, threads, workers, executor), 1):
                store.record(spec.name, run, result, wall_s=result.get("wall_s", 0.0), threads=threads)
                counts[result["status"]] = counts.get(result["status"], 0) + 1
                bar.update(1)
                error = f" ({result['error']})" if result.get("error") else ""
                line = (f"done {i}/{len(pending)}: {run.label} on {run.dataset} eps={run.epsilon:g} "
                        f"seed={run.seed} -> {result['status']}{error}")
                (bar.write if progress else echo)(line)
    return counts


def _local_results(pending: list[Run], limits, threads: int, workers: int, executor: str):
    """(run, result) in completion order; each worker thread only waits on its run's process."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures: dict = {}
        # the submissions are inside the try: an interrupt that lands while they are made (a worker thread may
        # already have started its process) must kill it too, or leaving the pool waits for that run to finish
        try:
            for run in pending:
                futures[pool.submit(execute, run.to_dict(), limits, threads)] = run
            running = set(futures)
            while running:
                # waits of half a second, never an open-ended one: the kernel may deliver Ctrl-C to a worker
                # thread, and Python runs its handler in the main thread only once that thread wakes
                done, running = wait(running, timeout=_POLL_S, return_when=FIRST_COMPLETED)
                for future in done:
                    yield futures[future], future.result()
        except BaseException:  # Ctrl-C or a failed commit: no new runs, and the ones in flight are killed
            for future in futures:
                future.cancel()
            kill_live_workers()
            raise


def _ray_results(pending: list[Run], limits, threads: int, workers: int, executor: str):
    try:
        import ray
    except ModuleNotFoundError:
        raise InputError('--executor ray needs Ray: pip install "ray>=2.9" (or pip install -e ".[ray]").') from None
    started_here = not ray.is_initialized()
    if started_here:
        if executor == "ray":  # local mode: a Ray instance on this machine with the cores the workers may use
            ray.init(num_cpus=workers * threads, include_dashboard=False, log_to_driver=False,
                     logging_level="ERROR")
        else:
            ray.init(address=executor, log_to_driver=False, logging_level="ERROR")
    waiting: list = []
    try:
        remote = ray.remote(num_cpus=threads, max_retries=0)(execute)
        refs = {remote.remote(run.to_dict(), limits, threads): run for run in pending}
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1, timeout=_POLL_S)  # short waits: see _local_results
            for ref in ready:
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a lost node or task: that run fails, the grid goes on
                    result = {"status": "failed", "error": f"ray: {type(exc).__name__}: {str(exc).splitlines()[0]}"}
                yield refs[ref], result
    except BaseException:  # Ctrl-C: cancelling a task interrupts its execute(), which kills its worker process
        for ref in waiting:
            ray.cancel(ref)
        raise
    finally:
        if started_here:
            ray.shutdown()
