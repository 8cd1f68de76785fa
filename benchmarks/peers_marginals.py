"""dpsynth's models against peer libraries on Adult, in one run: smartnoise-synth's MST / AIM (issue 18) and
DPCTGAN / PATECTGAN, and the ``ctgan`` package's CTGAN, SDV's (issue 20).

dpsynth needs pandas >= 3 and smartnoise-synth (through smartnoise-sql) pandas < 3, so the peers cannot share a
Python environment with dpsynth: this script fits dpsynth's models in process and runs each smartnoise model in a
worker process of another interpreter (``--peer-python``, a venv with ``pip install smartnoise-synth``), which reads
the training rows from a CSV file and writes its synthetic rows to another. Both sides are scored here, the same
way as ``adult_quality.py``: XGBoost trained on the synthetic rows and tested on adult.test (AUC, accuracy), mean
1-way and 2-way TVD against the training rows, fit time, and peak memory (the worker's own maximum RSS; for
dpsynth, the fit runs in a child process too, so both figures are per fit).

Budget: every model gets (epsilon, delta = 1e-5) in total. smartnoise spends ``--preprocessor-share`` (10%) of
epsilon on the bounds of the continuous columns (its ``preprocessor_eps``, subtracted from the training budget);
dpsynth gets Adult's public schema and spends its 10% metadata share on the DP row count and histograms. Sampling:
smartnoise's default is mbi's randomised-rounding sampler; ``--peer-sampler iid`` replaces it by mbi's i.i.d.
sampler (``synthetic_data(method="sample")``), which the issue asks for (rounding creates false links).

GANs: ``sn-dpctgan`` / ``sn-patectgan`` are smartnoise's defaults at the same (epsilon, 1e-5), with the same
preprocessor share; ``sdv-ctgan`` is the ``ctgan`` package (what SDV's ``CTGANSynthesizer`` runs) in its own
interpreter (``--ctgan-python``), non-private, with ``--epochs`` epochs, against dpsynth's ``ctgan``
(``--param epochs=...`` sets dpsynth's). Every fit gets ``--threads`` torch threads.

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
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEERS = ("sn-mst", "sn-aim", "sn-dpctgan", "sn-patectgan", "sdv-ctgan")
#: rows sampled from the GAN peers, which release no DP row count (a public constant, not Adult's count)
GAN_PEER_ROWS = 30_000


# ---------------------------------------------------------------------------------------------- worker
def worker(args: argparse.Namespace) -> None:
    """Runs in the peer's interpreter: fit one smartnoise model, write the synthetic rows (no dpsynth import)."""
    import pandas as pd

    spec = json.loads(Path(args.spec).read_text())
    train = pd.read_csv(args.train)
    for c in spec["categorical"]:
        train[c] = train[c].astype(str)
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:  # the marginal peers need no torch
        pass
    if args.worker == "sdv-ctgan":
        return ctgan_worker(args, train, spec)
    from snsynth import Synthesizer

    kind = args.worker.removeprefix("sn-")
    pre = args.preprocessor_share * args.epsilon
    start = time.perf_counter()
    synth = Synthesizer.create(kind, epsilon=args.epsilon, delta=1e-5)
    synth.fit(train, categorical_columns=spec["categorical"], continuous_columns=spec["continuous"],
              preprocessor_eps=pre, nullable=True)
    fit_s = time.perf_counter() - start
    # as many rows as the fitted model's total (never len(train) here); note that smartnoise's MST itself fits mbi
    # with known_total=len(data), the exact private row count, so its model already holds it: a peer flaw, reported
    if kind in ("dpctgan", "patectgan"):
        rows = synth.sample(GAN_PEER_ROWS)
        rows.to_csv(args.out, index=False)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        Path(args.out + ".json").write_text(json.dumps({"fit_s": fit_s, "peak_gb": peak}))
        return
    n_dp = max(1, int(round(float(synth.synthesizer.total))))
    if args.peer_sampler == "iid":  # smartnoise's own sample(), with mbi's i.i.d. sampler instead of rounding
        data = synth.synthesizer.synthetic_data(rows=n_dp, method="sample")
        if kind == "mst":
            df = synth.undo_compress_fn(data).df
        else:
            df = data.df[["col" + str(i) for i in range(synth._transformer.output_width)]]
        rows = synth._transformer.inverse_transform([tuple(t[1:]) for t in df.itertuples()])
    else:
        rows = synth.sample(n_dp)
    rows.to_csv(args.out, index=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    Path(args.out + ".json").write_text(json.dumps({"fit_s": fit_s, "peak_gb": peak}))


def ctgan_worker(args: argparse.Namespace, train, spec: dict) -> None:
    """The ``ctgan`` package's CTGAN (SDV's), non-private, ``--epochs`` epochs, its other defaults."""
    from ctgan import CTGAN

    start = time.perf_counter()
    synth = CTGAN(epochs=args.epochs)
    synth.fit(train, discrete_columns=spec["categorical"])
    fit_s = time.perf_counter() - start
    synth.sample(GAN_PEER_ROWS).to_csv(args.out, index=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    Path(args.out + ".json").write_text(json.dumps({"fit_s": fit_s, "peak_gb": peak}))


def dpsynth_worker(args: argparse.Namespace) -> None:
    """Runs in a child of dpsynth's interpreter (so its peak memory is its own)."""
    import torch

    from dpsynth import datasets
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
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    Path(args.out + ".json").write_text(json.dumps({"fit_s": fit_s, "peak_gb": peak}))


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
    ap.add_argument("--peer-sampler", choices=["round", "iid"], default="iid")
    ap.add_argument("--preprocessor-share", type=float, default=0.1)
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per fit before it is stopped")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker in PEERS:
        return worker(args)
    if args.worker:
        return dpsynth_worker(args)

    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from adult_quality import marginal_tvd, parse_params, utility

    from dpsynth import datasets

    adult = datasets.load("adult")
    train, test, schema = adult.train, adult.test, adult.schema
    params = parse_params(args.param)
    spec = {"categorical": [c.name for c in schema.columns if c.is_discrete],
            "continuous": [c.name for c in schema.columns if not c.is_discrete]}
    print(f"{'model':<12}{'seed':>5}{'fit_s':>9}{'peak_gb':>9}{'xgb_auc':>9}{'xgb_acc':>9}{'tvd1':>8}{'tvd2':>8}  note",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train.to_csv(folder / "train.csv", index=False)
        (folder / "spec.json").write_text(json.dumps(spec))
        for seed in [int(s) for s in args.seeds.split(",")]:
            for name in args.models.split(","):
                out = str(folder / f"{name}-{seed}.csv")
                python = sys.executable
                if name in PEERS:
                    python = args.ctgan_python if name == "sdv-ctgan" else args.peer_python
                    if not python:
                        flag = "--ctgan-python" if name == "sdv-ctgan" else "--peer-python"
                        print(f"{name:<12}{seed:>5}  skipped: no {flag}", flush=True)
                        continue
                cmd = [python, __file__, "--worker", name, "--train", str(folder / "train.csv"), "--spec",
                       str(folder / "spec.json"), "--out", out, "--epsilon", str(args.epsilon), "--seed", str(seed),
                       "--threads", str(args.threads), "--peer-sampler", args.peer_sampler,
                       "--preprocessor-share", str(args.preprocessor_share), "--epochs", str(args.epochs),
                       "--params", json.dumps(params)]
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
                facts = json.loads(Path(out + ".json").read_text())
                synth = pd.read_csv(out)
                for c in spec["categorical"]:
                    real = train[c]
                    synth[c] = synth[c].astype(str).map({str(v): v for v in real.dropna().unique()})
                score = utility(synth, test, seed=seed)
                tvd = marginal_tvd(train, synth)
                note = f"{args.peer_sampler} sampler" if name in ("sn-mst", "sn-aim") else ""
                print(f"{name:<12}{seed:>5}{facts['fit_s']:>9.1f}{facts['peak_gb']:>9.2f}{score['xgb_auc']:>9.3f}"
                      f"{score['xgb_acc']:>9.3f}{tvd['tvd1']:>8.3f}{tvd['tvd2']:>8.3f}  {note}", flush=True)


if __name__ == "__main__":
    main()
