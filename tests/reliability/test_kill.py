"""Interrupted work (issue 15), with real SIGKILLs: a killed ``dpsynth sample`` leaves a temp file that the next
write to the same output removes, and worker processes die with a killed parent.

Linux only (reads /proc to find child processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dpsynth._io import remove_stale_temps

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # field 4 of /proc/PID/stat: the parent pid
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, adult_small):
    from dpsynth.models.marginals import Marginals

    path = tmp_path_factory.mktemp("kill") / "m.dpsynth"
    Marginals().fit(adult_small, epsilon=1.0, delta=1e-5, seed=0).save(path)
    return path


def test_a_killed_sample_leaves_a_temp_file_the_next_write_removes(model_file, tmp_path):
    out = tmp_path / "synthetic.csv"
    cmd = [sys.executable, "-m", "dpsynth.cli", "sample", str(model_file), "-n", "5000000", "--out", str(out),
           "--seed", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: any(p.stat().st_size > 0 for p in tmp_path.glob(".synthetic.csv.dpsynth-*.tmp")), 120,
                  "the temp file to grow")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    temps = list(tmp_path.glob(".synthetic.csv.dpsynth-*.tmp"))
    assert len(temps) == 1 and str(proc.pid) in temps[0].name and not out.exists()  # the kill left it: no cleanup ran

    done = subprocess.run([sys.executable, "-m", "dpsynth.cli", "sample", str(model_file), "-n", "10", "--out",
                           str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob(".synthetic.csv.*")) and len(out.read_text().splitlines()) == 11


def test_stale_temp_files_of_live_writers_and_other_files_are_kept(tmp_path):
    target = tmp_path / "out.csv"
    mine = tmp_path / f".out.csv.dpsynth-{os.getpid()}-abc.tmp"  # a live writer (this process)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.csv.dpsynth-{dead.pid}-xyz.tmp"
    other = tmp_path / ".out.csv.someone-else.tmp"
    for p in (mine, stale, other):
        p.write_text("x")
    assert remove_stale_temps(target) == [stale]
    assert mine.exists() and other.exists() and not stale.exists()


WORKERS = textwrap.dedent("""
    import sys, time

    def slow(x):
        time.sleep(300)
        return x

    if sys.argv[1] == "executor":
        from dpsynth.executor import LocalExecutor
        LocalExecutor(2).map(slow, [1, 2])
    else:
        from dpsynth.evaluation._parallel import run_tasks
        run_tasks(slow, [(1,), (2,)], 2)
""")


@pytest.mark.parametrize("pool", ["executor", "evaluate"])
def test_workers_die_with_a_killed_parent(tmp_path, pool):
    """The attacks' executor (assess_risk, audits) and evaluate's model fits both run jobs in loky workers."""
    script = tmp_path / "workers.py"
    script.write_text(WORKERS)
    proc = subprocess.Popen([sys.executable, str(script), pool], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        def started() -> bool:
            workers[:] = [p for p in _children(proc.pid)
                          if "popen_loky" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
            return len(workers) == 2

        _wait_for(started, 120, "two loky workers")
        time.sleep(3)  # the jobs have reached the workers (each watches its parent from its first job on)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        _wait_for(lambda: not any(_alive(w) for w in workers), 20, "the workers to exit")
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
