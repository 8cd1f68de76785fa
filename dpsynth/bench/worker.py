"""One benchmark run in its own process: ``python -m dpsynth.bench.worker RUN.json OUT.json``.

The runner starts this module once per run, with the run's time and memory limits and its thread count set from
outside (:mod:`dpsynth.bench.runner`), so a crash, a leak or a hung fit costs one run, never the grid. The result
(status, the ledger's epsilon, fit / sample / evaluation seconds, peak memory, every row of the tidy evaluation
table) is written to OUT.json atomically; a run that raises writes its error instead.

Data: a registry dataset keeps its official test split when it has one, else a seeded 80/20 split (seed 0 for
every run of a grid, so seeds vary the fit, not the data); a registry classification target stored as numbers
becomes text labels (``class_0``, ...); ``rows`` keeps the first rows of the training split (benchmark scaling, a
public choice). ``schema: public`` fits with the schema dpsynth ships for the dataset, or the one
:func:`~dpsynth.data.inference.infer_schema` proposes from the training split, taken as public (the best case of a
data owner who knows each column's domain); ``schema: none`` fits without one (DP discovery; with ``dtypes:
private`` every cell is read as text first, as ``dpsynth fit FILE.csv`` reads a CSV).
"""

from __future__ import annotations

import json
import math
import resource
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

__all__ = ["peak_rss_mb", "prepare_data", "run"]


def prepare_data(run) -> tuple[Any, Any, Any, str | None]:
    """(train, test, public schema or None, target) of ``run``'s dataset."""
    import pandas as pd

    from dpsynth import datasets
    from dpsynth.data.inference import infer_schema

    if run.path is None:
        data = datasets.load(run.dataset)
        target, shipped = data.target, data.schema
        train, test = data.split(seed=0)
    else:
        from dpsynth._io import read_table

        frame = read_table(run.path)
        info = datasets.DatasetInfo(run.dataset, run.path, f"{len(frame)} rows", run.target, "classification",
                                    f"file:{run.path}", "unknown")
        train, test = datasets.Dataset(info, frame).split(seed=0)
        target, shipped = run.target, None
    if run.path is None and data.info.task == "classification" and target is not None and \
            pd.api.types.is_numeric_dtype(train[target].dtype):
        # a class label stored as a number (Wine's 0/1/2, Cardio's 0/1) is a category: modelled and scored as one
        train, test = (frame.assign(**{target: frame[target].map(lambda v: f"class_{v}")}) for frame in (train, test))
    if run.rows:
        train = train.iloc[: run.rows].reset_index(drop=True)
    schema = None
    if run.schema == "public":
        schema = shipped if shipped is not None else infer_schema(train, target=target, warn=False).reviewed()
    return train, test, schema, target


def run(run) -> dict[str, Any]:
    """Fit, sample and evaluate one :class:`~dpsynth.bench.spec.Run`; the result as a JSON-able dict."""
    from dpsynth import evaluate
    from dpsynth.models import get_model_class

    train, test, schema, target = prepare_data(run)
    if run.peer_python is not None:
        return _run_peer(run, train, test, schema, target)
    columns = list(train.columns)
    model = get_model_class(run.model)(**run.params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(train, epsilon=run.epsilon, delta=run.delta, schema=schema, seed=run.seed, dtypes=run.dtypes,
                  target=target if run.declare_target else None, noise=run.noise)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        synthetic = model.sample(seed=run.seed)  # the DP row count
        sample_s = time.perf_counter() - start
        # a fit without a schema may exclude columns (identifiers, empty ones; with a warning): score the kept ones
        kept = [c for c in train.columns if c in synthetic.columns]
        if len(kept) < train.shape[1]:
            train, test, schema = train[kept], None if test is None else test[kept], model.schema_
            target = target if target in kept else None
        start = time.perf_counter()
        result = evaluate(train, synthetic, real_test=test, schema=schema or model.schema_, target=target,
                          metrics=list(run.metrics), seeds=run.eval_seeds, executor="sequential",
                          ml_models=list(run.ml_models) or None)
        eval_s = time.perf_counter() - start
        risk_rows, risk_s = _risk(run, train, test, synthetic)
    metrics = _metric_rows(result) + risk_rows + [_kept_row(columns, kept)]
    spent = model.ledger_.epsilon()
    return {"status": "ok", "error": "", "ledger_epsilon": "inf" if math.isinf(spent) else spent, "fit_s": fit_s,
            "sample_s": sample_s, "eval_s": eval_s, "risk_s": risk_s, "n_synthetic": len(synthetic), "metrics": metrics}


def _run_peer(run, train, test, schema, target) -> dict[str, Any]:
    """A peer library's run (:mod:`dpsynth.bench.peers`): fitted in its own interpreter, scored here."""
    from dpsynth import evaluate
    from dpsynth.bench.peers import KNOWN_FLAWS, fit_and_sample
    from dpsynth.data.inference import infer_schema

    schema = schema or infer_schema(train, target=target, warn=False).reviewed()  # given to the peer as public
    synthetic, facts = fit_and_sample(run, train, schema, python=run.peer_python)
    synthetic = synthetic[[c for c in train.columns if c in synthetic.columns]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        result = evaluate(train, synthetic, real_test=test, schema=schema, target=target, metrics=list(run.metrics),
                          seeds=run.eval_seeds, executor="sequential", ml_models=list(run.ml_models) or None)
        eval_s = time.perf_counter() - start
        risk_rows, risk_s = _risk(run, train, test, synthetic)
    metrics = _metric_rows(result) + risk_rows + [
        {"metric": "peer.version", "subject": run.model, "value": None, "spread": None, "n_seeds": None,
         "note": facts["version"]},
        {"metric": "peer.accounting", "subject": run.model, "value": None, "spread": None, "n_seeds": None,
         "note": KNOWN_FLAWS.get(run.model, "as the peer reports it")}]
    claimed = "inf" if math.isinf(run.epsilon) else run.epsilon  # the peer's claim, not a dpsynth ledger
    return {"status": "ok", "error": "", "ledger_epsilon": claimed, "fit_s": facts["fit_s"],
            "sample_s": facts.get("sample_s"), "eval_s": eval_s, "risk_s": risk_s, "n_synthetic": len(synthetic),
            "metrics": metrics, "peer_peak_mb": facts["peak_mb"]}


def _kept_row(columns: list[str], kept: list[str]) -> dict[str, Any]:
    """Metric ``columns.kept``: how many of the table's columns the release has, the excluded ones in the note."""
    excluded = [c for c in columns if c not in kept]
    return {"metric": "columns.kept", "subject": "(all)", "value": float(len(kept)), "spread": None, "n_seeds": None,
            "note": f"of {len(columns)}" + (f"; excluded: {', '.join(excluded)}" if excluded else "")}


def _metric_rows(result) -> list[dict[str, Any]]:
    return [{"metric": r["metric"], "subject": str(r["subject"]), "value": _finite(r["value"]),
             "spread": _finite(r["spread"]), "n_seeds": None if _finite(r["n_seeds"]) is None else int(r["n_seeds"]),
             "note": r["note"] or ""} for r in result.table.to_dict(orient="records")]


def _risk(run, train, test, synthetic) -> tuple[list[dict[str, Any]], float | None]:
    """The spec's attacks on the release (control: the real test rows), as metric rows ``risk.<attack>.<metric>``
    with the interval in the note; skipped attacks are rows with no value and the reason."""
    if not run.risk:
        return [], None
    from dpsynth import assess_risk

    start = time.perf_counter()
    columns = list(synthetic.columns)  # DP discovery may have excluded columns: attack the released ones
    result = assess_risk(train[columns], synthetic, control=test[columns], attacks=list(run.risk),
                         executor="sequential", seed=run.seed)
    rows = [{"metric": f"risk.{r['attack']}.{r['metric']}", "subject": "(all)", "value": _finite(r["value"]),
             "spread": None, "n_seeds": 1, "note": f"ci [{r['ci_low']:.4g}, {r['ci_high']:.4g}], "
                                                  f"{r['n_targets']} targets"}
            for r in result.table.to_dict(orient="records")]
    rows += [{"metric": f"risk.{attack}.risk", "subject": "(all)", "value": None, "spread": None, "n_seeds": 0,
              "note": f"skipped: {why}"} for attack, why in result.skipped.items()]
    return rows, time.perf_counter() - start


def _finite(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB: VmHWM from /proc (Linux). Not ``ru_maxrss``, which a process
    started by fork + exec inherits from its parent (Linux keeps the pre-exec high-water mark), so every run would
    read at least the driver's size."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def main(argv: list[str] | None = None) -> int:
    from dpsynth._io import atomic_write_text
    from dpsynth.bench.spec import Run
    from dpsynth.errors import DPSynthError

    source, out = (argv if argv is not None else sys.argv[1:])
    spec = Run.from_dict(json.loads(Path(source).read_text()))
    try:
        result = run(spec)
    except MemoryError:
        result = {"status": "memory", "error": "the run exceeded its memory limit (MemoryError)"}
    except DPSynthError as exc:  # a refusal of the library: its one-line message
        result = {"status": "failed", "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    except Exception as exc:  # noqa: BLE001 - any other failure is recorded with where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result = {"status": "failed", "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                                               f" ({Path(where.filename).name}:{where.lineno})"}
    # a peer's interpreter ran beside this process (which waited for it): both count
    result["peak_mb"] = peak_rss_mb() + float(result.pop("peer_peak_mb", 0.0) or 0.0)
    atomic_write_text(out, json.dumps(result, allow_nan=False))
    return 0


def _exit_with_parent(poll_s: float = 0.5) -> None:
    """Exit when the driver that started this worker dies (``kill -9`` leaves no one to stop us: the worker runs in
    its own session, so the driver's process group signal does not reach it, and its result would go nowhere)."""
    import os
    import signal
    import threading

    # the runner names the parent it started us from: a driver killed before this line runs is caught too
    parent = int(os.environ.get("DPSYNTH_BENCH_PARENT", os.getppid()))

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:  # re-parented: the driver is gone
                if os.getpgid(0) == os.getpid():  # we lead our group (the runner's own session): take a peer's
                    os.killpg(0, signal.SIGKILL)  # interpreter or any other child with us
                os._exit(3)

    threading.Thread(target=watch, name="dpsynth-parent-watch", daemon=True).start()


if __name__ == "__main__":
    _exit_with_parent()
    sys.exit(main())
