"""dpsynth's models against peer libraries on Adult, in one run: smartnoise-synth's MST / AIM (issue 18) and
DPCTGAN / PATECTGAN, and the ``ctgan`` package's CTGAN, SDV's (issue 20).

dpsynth needs pandas >= 3 and smartnoise-synth (through smartnoise-sql) pandas < 3, so the peers cannot share a
Python environment with dpsynth: this script fits dpsynth's models in a child process and runs each peer in
another interpreter (``--peer-python``, a venv with ``pip install smartnoise-synth``) through the bench's peer
adapter (:func:`dpsynth.bench.peers.fit_and_sample`: the same script, sampler and budget split as a ``dpsynth
bench`` grid with ``peers:``), which reads the training rows from a CSV file and writes its synthetic rows to
another. Both sides are scored here, the same
way as ``adult_quality.py``: XGBoost trained on the synthetic rows and tested on adult.test (AUC, accuracy), mean
1-way and 2-way TVD against the training rows, fit time, and peak memory (the worker's own maximum RSS; for
dpsynth, the fit runs in a child process too, so both figures are per fit).

Budget: every model gets (epsilon, delta = 1e-5) in total. smartnoise spends 10% of epsilon on the bounds of the
continuous columns (its ``preprocessor_eps``, subtracted from the training budget); dpsynth gets Adult's public
schema and spends its 10% metadata share on the DP row count and histograms. Sampling: smartnoise's MST / AIM
sample i.i.d. through mbi's ``synthetic_data(method="sample")``, as the issue asks (its default randomised rounding
creates false links between columns).

GANs: ``sn-dpctgan`` / ``sn-patectgan`` are smartnoise's defaults at the same (epsilon, 1e-5), with the same
preprocessor share; ``sdv-ctgan`` is the ``ctgan`` package (what SDV's ``CTGANSynthesizer`` runs) in its own
interpreter (``--ctgan-python``), non-private, with ``--epochs`` epochs, against dpsynth's ``ctgan``
(``--param epochs=...`` sets dpsynth's). Every fit gets ``--threads`` torch threads. Peer GANs sample
:data:`dpsynth.bench.peers.PEER_ROWS` rows (they release no DP row count).

Example::

    python3 -m venv /tmp/venv-sn && /tmp/venv-sn/bin/pip install smartnoise-synth
    python benchmarks/peers_marginals.py --peer-python /tmp/venv-sn/bin/python --models mst,sn-mst --seeds 0
    python3 -m venv /tmp/venv-ctgan && /tmp/venv-ctgan/bin/pip install ctgan
    python benchmarks/peers_marginals.py --ctgan-python /tmp/venv-ctgan/bin/python --models ctgan,sdv-ctgan \
        --epochs 100 --param epochs=100 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


# ---------------------------------------------------------------------------------------------- worker
def dpsynth_worker(args: argparse.Namespace) -> None:
    """Runs in a child of dpsynth's interpreter (so its peak memory is its own)."""
    import torch

    from dpsynth import datasets
    from dpsynth.bench.worker import peak_rss_mb
    from dpsynth.models import get_model_class

    torch.set_num_threads(args.threads)
    adult = datasets.load("adult")
    start = time.perf_counter()
    cls = get_model_class(args.worker)
    epsilon = args.epsilon if cls.supports_dp else float("inf")
    params = json.loads(args.params) if args.params else {}
    model = cls(**params).fit(adult.train, epsilon=epsilon, delta=1e-5, schema=adult.schema, seed=args.seed)
    fit_s = time.perf_counter() - start
    model.sample(seed=args.seed).to_csv(args.out, index=False)
    Path(args.out + ".json").write_text(json.dumps({"fit_s": fit_s, "peak_gb": peak_rss_mb() / 1024}))


# ---------------------------------------------------------------------------------------------- driver
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mst,aim,sn-mst,sn-aim")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer-python", help="a Python with smartnoise-synth installed (needed for sn-* models)")
    ap.add_argument("--ctgan-python", help="a Python with the ctgan package installed (needed for sdv-ctgan)")
    ap.add_argument("--epochs", type=int, default=300, help="epochs of sdv-ctgan (the ctgan package's default: 300)")
    ap.add_argument("--param", action="append", default=[], help="dpsynth hyper-parameter NAME=VALUE (repeatable)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per fit before it is stopped")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return dpsynth_worker(args)

    from types import SimpleNamespace

    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from adult_quality import marginal_tvd, parse_params, utility

    from dpsynth import datasets
    from dpsynth.bench.peers import PEERS, fit_and_sample
    from dpsynth.errors import InputError

    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the peer interpreter's torch threads
    adult = datasets.load("adult")
    train, test, schema = adult.train, adult.test, adult.schema
    params = parse_params(args.param)
    categorical = [c.name for c in schema.columns if c.is_discrete]
    print(f"{'model':<12}{'seed':>5}{'fit_s':>9}{'peak_gb':>9}{'xgb_auc':>9}{'xgb_acc':>9}{'tvd1':>8}{'tvd2':>8}  note",
          flush=True)

    def report(name: str, seed: int, synth, facts: dict, note: str) -> None:
        for c in categorical:  # text read back from CSV -> the training split's values
            synth[c] = synth[c].astype(str).map({str(v): v for v in train[c].dropna().unique()})
        score = utility(synth, test, seed=seed)
        tvd = marginal_tvd(train, synth)
        print(f"{name:<12}{seed:>5}{facts['fit_s']:>9.1f}{facts['peak_gb']:>9.2f}{score['xgb_auc']:>9.3f}"
              f"{score['xgb_acc']:>9.3f}{tvd['tvd1']:>8.3f}{tvd['tvd2']:>8.3f}  {note}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for seed in [int(s) for s in args.seeds.split(",")]:
            for name in args.models.split(","):
                out = str(folder / f"{name}-{seed}.csv")
                if name in PEERS:
                    python = args.ctgan_python if name == "sdv-ctgan" else args.peer_python
                    if not python:
                        flag = "--ctgan-python" if name == "sdv-ctgan" else "--peer-python"
                        print(f"{name:<12}{seed:>5}  skipped: no {flag}", flush=True)
                        continue
                    run = SimpleNamespace(model=name, epsilon=float("inf") if name == "sdv-ctgan" else args.epsilon,
                                          delta=1e-5, seed=seed,
                                          params={"epochs": args.epochs} if name == "sdv-ctgan" else {})
                    try:
                        synth, facts = fit_and_sample(run, train, schema, python=python, time_s=args.timeout)
                    except subprocess.TimeoutExpired:
                        print(f"{name:<12}{seed:>5}  stopped after {args.timeout:.0f} s", flush=True)
                        continue
                    except InputError as exc:  # the peer's own failure, in one line
                        print(f"{name:<12}{seed:>5}  failed: {str(exc)[:150]}", flush=True)
                        continue
                    facts["peak_gb"] = facts["peak_mb"] / 1024
                    report(name, seed, synth, facts, "i.i.d. sampler" if name in ("sn-mst", "sn-aim") else "")
                    continue
                cmd = [sys.executable, __file__, "--worker", name, "--out", out, "--epsilon", str(args.epsilon),
                       "--seed", str(seed), "--threads", str(args.threads), "--params", json.dumps(params)]
                try:
                    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
                except subprocess.TimeoutExpired:
                    print(f"{name:<12}{seed:>5}  stopped after {args.timeout:.0f} s", flush=True)
                    continue
                if done.returncode != 0:
                    last = (done.stderr.strip().splitlines() or ["?"])[-1][:150]
                    print(f"{name:<12}{seed:>5}  failed: {last}", flush=True)
                    continue
                report(name, seed, pd.read_csv(out), json.loads(Path(out + ".json").read_text()), "")


if __name__ == "__main__":
    main()
