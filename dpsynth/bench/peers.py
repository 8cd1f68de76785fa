"""Peer libraries in a benchmark grid (issue 22): smartnoise-synth's AIM, MST, DPCTGAN and PATECTGAN, and SDV's
CTGAN (the ``ctgan`` package that SDV's ``CTGANSynthesizer`` runs), scored by dpsynth's evaluator like any run.

Their pins conflict with dpsynth's (smartnoise-synth needs pandas < 3 through smartnoise-sql), so each runs in an
interpreter of its own, named in the spec::

    peers: {smartnoise: /opt/venv-sn/bin/python, sdv: /opt/venv-ctgan/bin/python}
    models: [aim, sn-aim, ctgan, sdv-ctgan]

The bench worker writes the training split to a CSV file with the column kinds of the run's schema (public, or the
one :func:`~dpsynth.data.inference.infer_schema` proposes, taken as public: the peers are given what dpsynth's
``schema: public`` runs get), starts :data:`PEER_SCRIPT` in the peer's interpreter (no dpsynth import there), and
reads back the synthetic rows, the fit time, the peer process's peak memory and the library's version (recorded as
the metric ``peer.version``, with the version in its note).

**Accounting as the peer reports it.** The ledger epsilon recorded for a peer run is the epsilon it was asked for
(the peer's claim); :data:`KNOWN_FLAWS` are the places where we know the claim does not cover everything the peer
reads, recorded as the metric ``peer.accounting`` with the flaw in its note:

- smartnoise's MST and AIM fit mbi's model with ``known_total`` = the exact private row count (no DP count), and
  smartnoise spends ``preprocessor_eps`` (here 10% of epsilon) on the continuous columns' bounds;
- smartnoise's DPCTGAN and PATECTGAN sample conditions with training-by-sampling from the private rows' exact
  category frequencies outside the accountant (as CTGAN does), and their epsilon is the accountant's estimate
  after training (they train to a target and may stop below or overshoot it by a step).

Peer GANs release no DP row count: they sample :data:`PEER_ROWS` rows (a public constant); smartnoise's marginal
models sample as many rows as their model's total. Every peer samples i.i.d. (smartnoise's MST / AIM through mbi's
``synthetic_data(method="sample")``, not its default rounding, which creates false links between columns).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from dpsynth.errors import InputError

__all__ = ["PEERS", "KNOWN_FLAWS", "PEER_ROWS", "PEER_SCRIPT", "fit_and_sample", "peer_library"]

#: model name -> (library key of the spec's ``peers:``, the library's name for it, differentially private?)
PEERS = {
    "sn-aim": ("smartnoise", "aim", True),
    "sn-mst": ("smartnoise", "mst", True),
    "sn-dpctgan": ("smartnoise", "dpctgan", True),
    "sn-patectgan": ("smartnoise", "patectgan", True),
    "sdv-ctgan": ("sdv", "ctgan", False),
}
KNOWN_FLAWS = {
    "sn-aim": "mbi's model is fitted with known_total = the exact private row count (not a DP count)",
    "sn-mst": "mbi's model is fitted with known_total = the exact private row count (not a DP count)",
    "sn-dpctgan": "training-by-sampling reads the private category frequencies outside the accountant",
    "sn-patectgan": "training-by-sampling reads the private category frequencies outside the accountant",
}
PEER_ROWS = 30_000
PREPROCESSOR_SHARE = 0.1

# Runs in the peer's interpreter: argv = model, train.csv, meta.json, out.csv. Writes out.csv and out.csv.json.
PEER_SCRIPT = r'''
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
import pandas as pd
name, train_path, meta_path, out = sys.argv[1:5]
meta = json.load(open(meta_path))
train = pd.read_csv(train_path)
for c in meta["categorical"]:
    train[c] = train[c].astype(str)
try:
    import torch
    torch.set_num_threads(meta["threads"])
    torch.manual_seed(meta["seed"])
except ImportError:
    pass
import numpy as np
np.random.seed(meta["seed"])
start = time.perf_counter()
if name == "sdv-ctgan":
    import ctgan
    from ctgan import CTGAN
    model = CTGAN(**meta["params"])
    model.fit(train, discrete_columns=meta["categorical"])
    fit_s = time.perf_counter() - start
    rows, version = model.sample(meta["rows"]), "ctgan " + ctgan.__version__
else:
    from importlib.metadata import version as _version
    from snsynth import Synthesizer
    kind = name[len("sn-"):]
    model = Synthesizer.create(kind, epsilon=meta["epsilon"], delta=meta["delta"], **meta["params"])
    model.fit(train, categorical_columns=meta["categorical"], continuous_columns=meta["continuous"],
              preprocessor_eps=meta["preprocessor_share"] * meta["epsilon"], nullable=True)
    fit_s = time.perf_counter() - start
    version = "smartnoise-synth " + _version("smartnoise-synth")
    if kind in ("mst", "aim"):  # i.i.d. rows from mbi's model, as many as its total
        n = max(1, int(round(float(model.synthesizer.total))))
        data = model.synthesizer.synthetic_data(rows=n, method="sample")
        if kind == "mst":
            df = model.undo_compress_fn(data).df
        else:
            df = data.df[["col" + str(i) for i in range(model._transformer.output_width)]]
        rows = model._transformer.inverse_transform([tuple(t[1:]) for t in df.itertuples()])
    else:
        rows = model.sample(meta["rows"])
rows.to_csv(out, index=False)
def _vmhwm_mb():  # this process's own peak (ru_maxrss would include the parent's, inherited through exec)
    try:
        return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
json.dump({"fit_s": fit_s, "peak_mb": _vmhwm_mb(), "version": version}, open(out + ".json", "w"))
'''


def peer_library(model: str) -> str | None:
    """The ``peers:`` key a model needs, or None for a dpsynth model."""
    return PEERS[model][0] if model in PEERS else None


def fit_and_sample(run, train, schema, *, python: str, time_s: float | None = None) -> tuple[Any, dict[str, Any]]:
    """Fit peer ``run.model`` on ``train`` in ``python`` and return (synthetic frame, facts: fit_s, peak_mb,
    version, the claimed epsilon); a failure of the peer is an :class:`InputError` with its last line."""
    import pandas as pd

    library, _, private = PEERS[run.model]
    if private == math.isinf(run.epsilon):
        want = "a finite epsilon" if private else "epsilon inf (it is not differentially private)"
        raise InputError(f"{run.model} runs at {want}. Found epsilon {run.epsilon:g}.")
    kinds = {c.name: c.is_discrete for c in schema.columns}
    meta = {"categorical": [c for c, d in kinds.items() if d], "continuous": [c for c, d in kinds.items() if not d],
            "epsilon": run.epsilon, "delta": run.delta, "seed": run.seed, "params": run.params, "rows": PEER_ROWS,
            "preprocessor_share": PREPROCESSOR_SHARE, "threads": int(os.environ.get("OMP_NUM_THREADS", "1"))}
    with tempfile.TemporaryDirectory(prefix="dpsynth-peer-") as tmp:
        folder = Path(tmp)
        train.to_csv(folder / "train.csv", index=False)
        (folder / "meta.json").write_text(json.dumps(meta))
        out = folder / "synthetic.csv"
        start = time.perf_counter()
        done = subprocess.run([python, "-c", PEER_SCRIPT, run.model, str(folder / "train.csv"),
                               str(folder / "meta.json"), str(out)], capture_output=True, text=True, timeout=time_s)
        if done.returncode != 0 or not out.is_file():
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise InputError(f"{run.model} ({library}) failed: {lines[-1][:300] if lines else done.returncode}")
        facts = json.loads(Path(f"{out}.json").read_text())
        synthetic = pd.read_csv(out)
    facts["wall_s"] = time.perf_counter() - start
    return synthetic, facts
