"""``dpsynth bench`` (issue 22): spec validation names the field, a grid runs and is stored, a re-run skips what is
done, a failing / killed / hung / memory-starved run is recorded without stopping the grid, a driver killed with
SIGKILL loses only the run in flight (whose worker exits), Ctrl-C kills the runs in flight, and the Ray executor
runs the same grid in local mode."""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dpsynth.bench import ResultStore, load_spec, parse_spec, run_bench
from dpsynth.bench.report import summary
from dpsynth.bench.runner import execute, threads_per_worker
from dpsynth.cli import main
from dpsynth.errors import InputError

pytest.importorskip("duckdb")

SMALL = {"name": "t", "models": ["marginals"], "datasets": ["wine"], "epsilons": [1], "seeds": [0, 1],
         "metrics": ["unsupervised"], "limits": {"time_s": 300}}


@pytest.mark.parametrize("change,message", [
    ({"models": ["no-such-model"]}, "spec.models[0].name: unknown model 'no-such-model'"),
    ({"models": [{"name": "marginals", "params": {"bins": 3}}]}, "spec.models[0].params: marginals has no "
                                                                   "hyper-parameter bins"),
    ({"models": [{"name": "marginals", "colour": 1}]}, "spec.models[0] has unknown field(s) colour"),
    ({"datasets": ["nope"]}, "spec.datasets[0].name: unknown dataset 'nope'"),
    ({"datasets": ["karate"]}, "spec.datasets[0].name: karate is a graph"),
    ({"datasets": [{"name": "x", "path": "missing.csv"}]}, "spec.datasets[0].path"),
    ({"epsilons": [1, -2]}, "spec.epsilons[1] must be > 0"),
    ({"epsilons": []}, "spec.epsilons must be a non-empty list"),
    ({"deltas": [1.5]}, "spec.deltas[0] must be < 1"),
    ({"seeds": [0, "a"]}, "spec.seeds[1] must be an integer"),
    ({"ml_models": ["xgb", "svm"]}, "spec.ml_models must be a non-empty list drawn from dt, rf, lr, mlp, xgb"),
    ({"models": ["sn-aim"]}, "spec.models[0].name: sn-aim runs in smartnoise's own interpreter: add peers:"),
    ({"peers": {"smartnoise": "/no/such/python"}}, "spec.peers.smartnoise: '/no/such/python' is not an executable"),
    ({"peers": {"gretel": "/usr/bin/python3"}}, "spec.peers must map sdv / smartnoise / synthcity to a Python"),
    ({"schema": "maybe"}, "spec.schema must be 'public' or 'none'"),
    ({"metrics": ["speed"]}, "spec.metrics must be a list of"),
    ({"limits": {"time_s": 0}}, "spec.limits.time_s must be > 0"),
    ({"limits": {"cpu": 2}}, "spec.limits must be a mapping with time_s"),
    ({"epochs": 3}, "spec has unknown field(s) epochs"),
    ({"risk": ["shadow_groundhog"]}, "spec.risk must be false, 'default' or a list of"),
    ({"models": [{"name": "marginals"}, {"name": "marginals"}]}, "two models have the same label"),
    ({"declare_target": "yes", "schema": "none"}, "spec.declare_target must be true or false"),
    ({"declare_target": True}, "spec.declare_target applies without a schema"),
    ({"noise": "opendp"}, "spec.noise must be 'numpy' or 'secure'"),
    ({"noise": "secure", "models": ["dp-vae", "sn-aim"], "peers": {"smartnoise": sys.executable}},
     "spec.noise: secure covers dpsynth's DP models; sn-aim draws its noise in its own library"),
])
def test_spec_errors_name_the_field(change, message, tmp_path):
    with pytest.raises(InputError) as info:
        parse_spec({**SMALL, **change}, base=tmp_path)
    assert message in str(info.value) and len(str(info.value).splitlines()) == 1


def test_spec_file_grid_and_run_keys(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: g\nmodels: [marginals, {name: aim, params: {max_model_size: 4}, label: aim4}]\n"
                    "datasets: [wine]\nepsilons: [0.5, inf]\ndeltas: [1.0e-5]\nseeds: [0, 1, 2]\n")
    spec = load_spec(path)
    assert len(spec.runs) == 2 * 2 * 3 and len({r.key for r in spec.runs}) == 12
    inf_run = next(r for r in spec.runs if math.isinf(r.epsilon))
    assert inf_run.to_dict()["epsilon"] == "inf" and type(inf_run).from_dict(inf_run.to_dict()) == inf_run
    renamed = parse_spec({**SMALL, "models": [{"name": "marginals", "label": "floor"}]})
    assert renamed.runs[0].key == parse_spec(SMALL).runs[0].key  # a label is a display name
    assert parse_spec({**SMALL, "epsilons": [2]}).runs[0].key != parse_spec(SMALL).runs[0].key
    # a declared target is a different fit; left at its default, the keys recorded before the field stay valid
    no_schema = {**SMALL, "schema": "none"}
    declared = parse_spec({**no_schema, "declare_target": True}).runs[0]
    assert declared.declare_target and declared.key != parse_spec(no_schema).runs[0].key
    assert parse_spec({**no_schema, "declare_target": False}).runs[0].key == parse_spec(no_schema).runs[0].key
    assert type(declared).from_dict(declared.to_dict()) == declared
    # so is secure noise; "numpy" (the default) keeps the old keys
    secure = parse_spec({**SMALL, "noise": "secure"}).runs[0]
    assert secure.noise == "secure" and secure.key != parse_spec(SMALL).runs[0].key
    assert parse_spec({**SMALL, "noise": "numpy"}).runs[0].key == parse_spec(SMALL).runs[0].key
    (tmp_path / "bad.yaml").write_text("models: [marginals\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_spec(tmp_path / "bad.yaml")


def test_a_secure_run_fits_with_opendps_noise(monkeypatch):
    pytest.importorskip("opendp")
    import dpsynth.privacy.mechanisms as mechanisms
    from dpsynth.bench.worker import run as run_one

    drawn = []
    secure = mechanisms.discrete_gaussian
    monkeypatch.setattr(mechanisms, "discrete_gaussian", lambda counts, sigma: drawn.append(sigma) or
                        secure(counts, sigma))
    result = run_one(parse_spec({**SMALL, "noise": "secure"}).runs[0])
    assert result["status"] == "ok" and result["ledger_epsilon"] <= 1.0 + 1e-9 and len(drawn) > 5


def test_grid_runs_seeds_outermost_and_non_private_models_at_inf_only():
    spec = parse_spec({**SMALL, "models": ["marginals", "ctgan", "sdv-ctgan"], "epsilons": [1, "inf"],
                       "seeds": [0, 1], "peers": {"sdv": sys.executable}})
    cells = [(r.seed, r.epsilon, r.model) for r in spec.runs]
    # ctgan and the SDV peer refuse a finite epsilon: left out there, run at inf; the private floor runs at both
    assert cells == [(s, e, m) for s in (0, 1) for e in (1, math.inf) for m in ("marginals", "ctgan", "sdv-ctgan")
                     if math.isinf(e) or m == "marginals"]
    assert spec.non_private_left_out == 4
    with pytest.raises(InputError, match="every model of the spec is non-private and every epsilon finite"):
        parse_spec({**SMALL, "models": ["ctgan"]})


def test_threads_are_shared_out_among_workers():
    assert threads_per_worker(1, cores=2) == 2 and threads_per_worker(2, cores=2) == 1
    assert threads_per_worker(4, cores=2) == 1 and threads_per_worker(3, cores=8) == 2


def test_grid_runs_records_and_resumes(tmp_path):
    results = tmp_path / "r.duckdb"
    csv = tmp_path / "wine.csv"
    from dpsynth import datasets

    datasets.load("wine").train.to_csv(csv, index=False)
    spec = parse_spec({**SMALL, "datasets": ["wine", {"name": "wine-file", "path": str(csv), "target": "nope"}]})
    counts = run_bench(spec, results, workers=2, progress=False, echo=lambda _: None)
    assert counts == {"skipped": 0, "ok": 2, "failed": 2}
    with ResultStore(results, read_only=True) as store:
        runs, metrics = store.runs(), store.metrics()
    assert len(runs) == 4 and runs["key"].is_unique
    ok = runs[runs["status"] == "ok"]
    assert (ok["ledger_epsilon"].between(0.9, 1.0 + 1e-6)).all() and (ok["fit_s"] > 0).all()
    assert (ok["peak_mb"] > 50).all() and (ok["n_synthetic"] > 0).all()
    assert set(metrics["key"]) == set(ok["key"]) and "marginal.tvd1" in set(metrics["metric"])
    failed = runs[runs["status"] == "failed"]
    assert failed["error"].str.contains("nope").all()  # the worker's one-line reason
    table = summary(runs, metrics)
    row = table[(table["dataset"] == "wine")].iloc[0]
    assert row["runs"] == "2 ok" and row["tvd1"] != "-" and "±" in row["tvd1"]
    again = run_bench(spec, results, progress=False, echo=lambda _: None)
    assert again == {"skipped": 4}
    retry = run_bench(spec, results, retry_failed=True, progress=False, echo=lambda _: None)
    assert retry == {"skipped": 2, "failed": 2}
    with ResultStore(results, read_only=True) as store:
        assert len(store.runs()) == 4  # replaced, not duplicated


def test_columns_a_fit_excludes_are_recorded_and_the_kept_ones_scored(tmp_path):
    from dpsynth import datasets

    csv = tmp_path / "adult-ids.csv"
    table = datasets.load("adult").train.head(8000)
    table.insert(0, "id", [f"row{i}" for i in range(len(table))])  # an identifier: DP discovery excludes it
    table.to_csv(csv, index=False)
    spec = parse_spec({**SMALL, "datasets": [{"name": "ids", "path": str(csv), "target": "income"}], "seeds": [0],
                       "schema": "none", "metrics": ["similarity"]})
    assert run_bench(spec, tmp_path / "r.duckdb", progress=False, echo=lambda _: None)["ok"] == 1
    with ResultStore(tmp_path / "r.duckdb", read_only=True) as store:
        store_runs, store_metrics = store.runs(), store.metrics()
    metrics = store_metrics.set_index("metric")
    assert metrics.loc["columns.kept", "value"] == 15
    assert metrics.loc["columns.kept", "note"] == "of 16; excluded: id"
    assert summary(store_runs, store_metrics).iloc[0]["kept"] == "15"
    assert math.isfinite(float(metrics.loc["similarity.association_diff", "value"]))  # scored on the kept columns


def test_one_driver_writes_and_a_report_reads_while_it_runs(tmp_path):
    results = tmp_path / "r.duckdb"
    run = parse_spec(SMALL).runs[0]
    with ResultStore(results) as writer:
        writer.record("t", run, {"status": "failed", "error": "x"}, wall_s=1.0, threads=1)
        with pytest.raises(InputError, match=rf"Another dpsynth bench \(pid {os.getpid()}\) is writing r.duckdb"):
            ResultStore(results)
        reader = ResultStore(results, read_only=True)  # the driver holds no connection between commits
        assert reader.statuses() == {run.key: "failed"}
        writer.record("t", run, {"status": "ok"}, wall_s=1.0, threads=1)
        assert reader.statuses() == {run.key: "ok"} and len(reader.runs()) == 1
        with pytest.raises(InputError, match="opened read-only"):
            reader.record("t", run, {"status": "ok"}, wall_s=1.0, threads=1)
    with ResultStore(results) as again:  # the lock went with the first driver
        assert len(again.runs()) == 1
    (tmp_path / "junk.duckdb").write_text("not a database")
    with pytest.raises(InputError, match="Cannot open results file"):
        ResultStore(tmp_path / "junk.duckdb", read_only=True)


_FAKE_PEER = """#!{python}
# stands in for a peer's interpreter: ignores the script (-c SCRIPT) and releases the training rows, shuffled
import json, sys
import pandas as pd
name, train, meta, out = sys.argv[3:7]
pd.read_csv(train).sample(frac=1.0, random_state=0).to_csv(out, index=False)
json.dump({{"fit_s": 0.5, "sample_s": 0.25, "peak_mb": 10.0, "version": "fakepeer 0.1 " + name}},
          open(out + ".json", "w"))
"""


def test_peer_models_run_in_their_own_interpreter_and_are_scored_here(tmp_path):
    python = tmp_path / "peer-python"
    python.write_text(_FAKE_PEER.format(python=sys.executable))
    python.chmod(0o755)
    spec = parse_spec({"name": "p", "models": ["sn-aim", "sdv-ctgan", "sc-pategan"], "datasets": ["wine"],
                       "epsilons": [1, "inf"], "metrics": ["similarity"],
                       "peers": {"smartnoise": str(python), "sdv": str(python), "synthcity": str(python)}})
    assert spec.non_private_left_out == 1  # SDV's CTGAN at epsilon 1: not in the grid
    results = tmp_path / "r.duckdb"
    counts = run_bench(spec, results, progress=False, echo=lambda _: None)
    assert counts == {"skipped": 0, "ok": 3, "failed": 2}
    with ResultStore(results, read_only=True) as store:
        runs, metrics = store.runs().set_index(["model", "epsilon"]), store.metrics()
    assert runs.loc[("sn-aim", 1.0), "status"] == "ok" and runs.loc[("sn-aim", 1.0), "ledger_epsilon"] == 1.0
    assert runs.loc[("sn-aim", 1.0), "fit_s"] == 0.5 and runs.loc[("sn-aim", 1.0), "sample_s"] == 0.25
    assert ("sdv-ctgan", 1.0) not in runs.index and runs.loc[("sdv-ctgan", math.inf), "status"] == "ok"
    assert "runs at a finite epsilon" in runs.loc[("sn-aim", math.inf), "error"]
    # a run built by hand past the grid's pruning is still refused by the peer adapter
    by_hand = dataclasses.replace(spec.runs[0], model="sdv-ctgan", label="sdv-ctgan", peer_python=str(python))
    refused = execute(by_hand.to_dict(), {"time_s": 120.0, "memory_gb": 4.0}, 1)
    assert refused["status"] == "failed" and "epsilon inf (it is not differentially private)" in refused["error"]
    aim = metrics[metrics["key"] == runs.loc[("sn-aim", 1.0), "key"]].set_index("metric")
    assert aim.loc["peer.version", "note"] == "fakepeer 0.1 sn-aim"
    assert "known_total" in aim.loc["peer.accounting", "note"]
    pategan = metrics[metrics["key"] == runs.loc[("sc-pategan", 1.0), "key"]].set_index("metric")
    assert "data-dependent moments accountant" in pategan.loc["peer.accounting", "note"]
    # the released rows are the training rows: the evaluator sees a perfect copy
    assert aim.loc["similarity.association_diff", "value"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_a_workers_peak_memory_is_its_own_not_its_parents():
    """ru_maxrss survives fork + exec on Linux: a worker started by a large driver would read the driver's size."""
    ballast = bytearray(400 * 2 ** 20)
    ballast[:: 4096] = b"x" * len(ballast[:: 4096])  # touched: resident
    probe = "from dpsynth.bench.worker import peak_rss_mb; print(peak_rss_mb())"
    child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert 5 < float(child.stdout) < 300  # the interpreter and NumPy-free imports, far below the 400 MB parent
    del ballast


def test_a_worker_started_while_an_interrupt_is_handled_dies_at_once():
    """The race behind Ctrl-C: a thread that starts its worker process just after the driver collected the live ones
    must see the interrupt and kill its own process."""
    from dpsynth.bench import runner

    run = parse_spec(SMALL).runs[0].to_dict()
    runner.kill_live_workers()  # the interrupt, with nothing registered yet
    try:
        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            execute(run, {"time_s": 60.0, "memory_gb": 4.0}, 1, command=[sys.executable, "-c",
                                                                        "import time; time.sleep(60)"])
        assert time.perf_counter() - start < 10 and not runner._LIVE
    finally:
        runner._STOPPING.clear()


def test_failed_killed_hung_and_memory_starved_workers_become_results():
    limits = {"time_s": 3.0, "memory_gb": 4.0}
    run = parse_spec(SMALL).runs[0].to_dict()
    py = sys.executable
    killed = execute(run, limits, 1, command=[py, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert killed["status"] == "failed" and killed["error"] == "worker killed by SIGKILL"
    start = time.perf_counter()
    hung = execute(run, limits, 1, command=[py, "-c", "import time; time.sleep(60)"])
    assert hung["status"] == "timeout" and time.perf_counter() - start < 30
    memory = execute(run, {"time_s": 30.0, "memory_gb": 0.5}, 1,
                     command=[py, "-c", "x = bytearray(2 * 1024 ** 3)"])
    assert memory["status"] == "memory" and "0.5 GB" in memory["error"]
    crashed = execute(run, limits, 1, command=[py, "-c", "raise SystemExit('bad things')"])
    assert crashed["status"] == "failed" and crashed["error"] == "bad things"


def _workers_of(driver_pid: int) -> list[int]:
    """The live worker processes a driver started (their command line names its scratch directory)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        scratch = f"dpsynth-bench-{driver_pid}-".encode()
        if proc.name.isdigit() and b"dpsynth.bench.worker" in cmdline and scratch in cmdline:
            pids.append(int(proc.name))
    return pids


def _wait_for(condition, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _start_driver(tmp_path, grid: str, *, wait_for_done: bool) -> tuple[subprocess.Popen, Path, Path]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: k\n{grid}\nepsilons: [1]\nmetrics: [unsupervised]\n")
    results = tmp_path / "r.duckdb"
    # faulthandler: a driver that hangs can be made to print every thread's stack (SIGABRT) for the failure report
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    # SIGINT back to its default in the driver, as a terminal's Ctrl-C finds it: a test run started in the background
    # of a non-interactive shell (`bash .ci/run &`) ignores SIGINT, and an ignored signal is inherited through exec,
    # so the driver would never see the test's Ctrl-C (the intermittent "did not exit within 30 s of SIGINT")
    driver = subprocess.Popen([sys.executable, "-m", "dpsynth.cli", "bench", str(spec), "--results", str(results),
                               "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if wait_for_done:
        for line in driver.stdout:
            if line.startswith("done "):
                break
    assert _wait_for(lambda: _workers_of(driver.pid), 30), "no run started"
    return driver, spec, results


# one run that takes minutes (AIM at its default settings on all of Adult): it is surely in flight when signalled
_SLOW_GRID = "models: [aim]\ndatasets: [adult]\nseeds: [0]"


def _scratch_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"dpsynth-bench-{pid}-*"))


needs_proc = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds workers through /proc")


@needs_proc
@pytest.mark.slow(reason="about 25 s: a driver and its worker processes started, killed and resumed")
@pytest.mark.ci
def test_a_driver_killed_with_sigkill_resumes_without_losing_or_repeating_runs(tmp_path):
    driver, spec, results = _start_driver(tmp_path, "models: [marginals]\ndatasets: [wine]\nseeds: [0, 1, 2, 3]",
                                          wait_for_done=True)
    os.killpg(driver.pid, signal.SIGKILL)  # the driver alone: its worker runs in its own session
    driver.wait()
    assert _scratch_of(driver.pid)  # the run in flight's scratch directory: nobody left to remove it
    with ResultStore(results, read_only=True) as store:
        recorded = len(store.runs())
    assert 1 <= recorded < 4
    counts = run_bench(load_spec(spec), results, progress=False, echo=lambda _: None)
    assert counts["skipped"] == recorded and counts.get("ok", 0) == 4 - recorded
    with ResultStore(results, read_only=True) as store:
        runs = store.runs()
    assert len(runs) == 4 and runs["key"].is_unique and (runs["status"] == "ok").all()
    assert not _scratch_of(driver.pid), "the next grid did not remove the killed driver's scratch directory"


@needs_proc
def test_a_worker_exits_when_its_driver_is_killed(tmp_path):
    driver, _, _ = _start_driver(tmp_path, _SLOW_GRID, wait_for_done=False)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert _wait_for(lambda: not _workers_of(driver.pid), 10), "a worker outlived its killed driver"


@needs_proc
def test_ctrl_c_kills_the_runs_in_flight_and_records_none_of_them(tmp_path):
    driver, _, results = _start_driver(tmp_path, _SLOW_GRID, wait_for_done=False)
    driver.send_signal(signal.SIGINT)
    try:
        # communicate, not wait: it drains the pipes, so a driver with much to say cannot block on a full pipe
        _, err = driver.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # report where it hangs (how the worker-thread delivery of SIGINT was found)
        driver.send_signal(signal.SIGABRT)
        out, err = driver.communicate(timeout=30)
        pytest.fail(f"the driver did not exit within 30 s of SIGINT. stdout: {out[-1500:]!r} stderr (thread "
                    f"stacks): {err[-6000:]!r}")
    assert driver.returncode == 130 and "interrupted" in err, err[-2000:]
    assert not _workers_of(driver.pid) and not _scratch_of(driver.pid)
    with ResultStore(results, read_only=True) as store:
        assert len(store.runs()) == 0  # the interrupted run is not recorded: it runs again next time


@pytest.mark.slow(reason="starts a local Ray cluster, about 18 s")
@pytest.mark.ci
def test_ray_executor_in_local_mode(tmp_path):
    pytest.importorskip("ray")
    counts = run_bench(parse_spec(SMALL), tmp_path / "r.duckdb", workers=2, executor="ray", progress=False,
                       echo=lambda _: None)
    assert counts == {"skipped": 0, "ok": 2}


def test_cli_bench_and_report(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: c\nmodels: [marginals]\ndatasets: [wine]\nepsilons: [1, inf]\nseeds: [0]\n"
                    "metrics: [unsupervised]\nrisk: [closest_distance_hamming]\n")
    results, html = tmp_path / "r.duckdb", tmp_path / "r.html"
    assert main(["bench", str(spec), "--results", str(results), "--quiet"]) == 0
    assert "finished: 2 ok, 0 skipped" in capsys.readouterr().out
    assert main(["bench", "report", str(results), "--html", str(html), "--metric", "bhattacharyya"]) == 0
    printed = capsys.readouterr().out
    assert "marginals" in printed and "bhattacharyya" in printed and " inf " in printed and "risk_max" in printed
    with ResultStore(results, read_only=True) as store:
        runs, metrics = store.runs(), store.metrics()
    risk = metrics[metrics["metric"] == "risk.closest_distance_hamming.risk"]
    assert len(risk) == 2 and risk["value"].between(0, 1).all() and risk["note"].str.startswith("ci [").all()
    page = html.read_text()
    assert "Summary (mean" in page and "data:image/png;base64" in page
    # one subject of a metric, and the table as Markdown for a README
    assert main(["bench", "report", str(results), "--markdown", "--metric", "marginal.tvd1:alcohol"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[:2] == ["dataset", "label"] and "marginal.tvd1:alcohol" in header and set(lines[1]) <= set("|- ")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[header.index("epsilon")] == "1"
    alcohol = metrics[(metrics["metric"] == "marginal.tvd1") & (metrics["subject"] == "alcohol")
                      & (metrics["key"] == runs.loc[runs["epsilon"] == 1, "key"].iloc[0])]["value"]
    assert float(cells[header.index("marginal.tvd1:alcohol")]) == pytest.approx(alcohol.iloc[0], rel=1e-3)
    assert main(["bench", str(spec)]) == 2
    assert "needs --results" in capsys.readouterr().err
    assert main(["bench", "report", str(tmp_path / "none.duckdb")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_shipped_specs_are_valid():
    """benchmarks/specs/*.yaml are what the README's tables are run with: they must keep parsing."""
    from pathlib import Path

    specs = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "specs").glob("*.yaml"))
    assert len(specs) >= 4
    for path in specs:
        assert load_spec(path).runs, path.name


def test_the_every_model_spec_lists_every_registered_model():
    """The README's one table of every model comes from every_model.yaml: a new model must join it."""
    from dpsynth.models import available_models

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "specs" / "every_model.yaml"
    assert {run.model for run in load_spec(path).runs} == set(available_models())


def test_private_dtypes_need_schema_none():
    with pytest.raises(InputError, match="spec.dtypes: private applies without a schema"):
        parse_spec({**SMALL, "dtypes": "private"})
    assert parse_spec({**SMALL, "schema": "none", "dtypes": "private"}).runs[0].dtypes == "private"
