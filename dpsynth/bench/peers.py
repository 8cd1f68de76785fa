"""Peer libraries in a benchmark grid (issue 22): smartnoise-synth's AIM, MST, DPCTGAN and PATECTGAN, synthcity's
AIM, DPGAN, PATE-GAN, PrivBayes and (non-private) TabDDPM, and SDV's CTGAN (the ``ctgan`` package that SDV's
``CTGANSynthesizer`` runs), scored by dpsynth's evaluator like any run.

Their pins conflict with dpsynth's (smartnoise-synth needs pandas < 3 through smartnoise-sql), so each runs in an
interpreter of its own, named in the spec::

    peers: {smartnoise: /opt/venv-sn/bin/python, synthcity: /opt/venv-sc/bin/python, sdv: /opt/venv-ctgan/bin/python}
    models: [aim, sn-aim, sc-aim, ctgan, sdv-ctgan]

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
  after training (they train to a target and may stop below or overshoot it by a step);
- synthcity (read in schneiderkamplab-synthcity 0.2.16, the maintained fork; the PyPI ``synthcity`` pins torch <
  2.3): every plugin's ``fit`` records a schema of the private rows (exact minima, maxima and categories) and, in
  its default ``strict`` mode, ``generate`` drops the rows outside it and duplicate rows, and calls the sampler
  again until ``count`` rows pass (up to 500 times). Its AIM runs the whole mechanism inside each such call (each
  call spends epsilon again) on a domain of each column's exact distinct private values; DPGAN stops early on a
  detection score of a held-out fifth of the private rows (no noise) and accounts Opacus's shuffled fixed-size
  batches as Poisson samples; PATE-GAN's moments accountant reads the teachers' exact vote counts (a data-dependent
  epsilon), skips the batches whose noisy votes are mostly 1 and is checked only after a whole teacher / student
  round; PrivBayes label-encodes numeric columns over their exact distinct private values (the release's value set).
  DPGAN's and PATE-GAN's encoder (a Gaussian mixture per numeric column) is fitted on the private rows.

Peer GANs release no DP row count: they sample :data:`PEER_ROWS` rows (a public constant), as do synthcity's models
(through their public ``generate``, as a user would call it); smartnoise's marginal models sample as many rows as
their model's total. Every peer but synthcity's AIM samples i.i.d. (smartnoise's MST / AIM through mbi's
``synthetic_data(method="sample")``, not its default rounding, which creates false links between columns); synthcity's
AIM calls its vendored mbi's ``synthetic_data()`` with that rounding inside ``generate``, with no switch to reach.
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
    "sc-aim": ("synthcity", "aim", True),
    "sc-dpgan": ("synthcity", "dpgan", True),
    "sc-pategan": ("synthcity", "pategan", True),
    "sc-privbayes": ("synthcity", "privbayes", True),
    "sc-tabddpm": ("synthcity", "ddpm", False),
    "sdv-ctgan": ("sdv", "ctgan", False),
}
_SYNTHCITY_SCHEMA = "the private rows' exact min / max / categories filter the output (strict mode)"
KNOWN_FLAWS = {
    "sn-aim": "mbi's model is fitted with known_total = the exact private row count (not a DP count)",
    "sn-mst": "mbi's model is fitted with known_total = the exact private row count (not a DP count)",
    "sn-dpctgan": "training-by-sampling reads the private category frequencies outside the accountant",
    "sn-patectgan": "training-by-sampling reads the private category frequencies outside the accountant",
    "sc-aim": "AIM reruns on the private rows inside every generate() call (each spends epsilon again); the domain is "
              "each column's exact distinct private values; " + _SYNTHCITY_SCHEMA,
    "sc-dpgan": "early stopping on a detection score of a held-out fifth of the private rows (no noise); shuffled "
                "fixed-size batches accounted as Poisson; encoder fitted on the private rows; " + _SYNTHCITY_SCHEMA,
    "sc-pategan": "data-dependent moments accountant (exact vote counts), batches with mostly-1 noisy votes not "
                  "accounted, budget checked only after each round; encoder fitted on the private rows; "
                  + _SYNTHCITY_SCHEMA,
    "sc-privbayes": "numeric columns label-encoded over their exact distinct private values (released as the "
                    "output's value set); " + _SYNTHCITY_SCHEMA,
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
elif name.startswith("sc-"):
    from importlib.metadata import version as _version, PackageNotFoundError
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader
    kind = meta["library_name"]
    params = dict(meta["params"])
    if meta["private"]:
        import inspect
        accepts = inspect.signature(Plugins().get_type(kind).__init__).parameters
        params.update({k: meta[k] for k in ("epsilon", "delta") if k in accepts})  # PrivBayes is pure epsilon-DP
    model = Plugins().get(kind, random_state=meta["seed"], **params)
    model.fit(GenericDataLoader(train))
    fit_s = time.perf_counter() - start
    rows = model.generate(count=meta["rows"]).dataframe()
    for package in ("schneiderkamplab-synthcity", "synthcity"):
        try:
            version = package + " " + _version(package)
            break
        except PackageNotFoundError:
            version = "synthcity (version unknown)"
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
sample_s = time.perf_counter() - start - fit_s
rows.to_csv(out, index=False)
def _vmhwm_mb():  # this process's own peak (ru_maxrss would include the parent's, inherited through exec)
    try:
        return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
json.dump({"fit_s": fit_s, "sample_s": sample_s, "peak_mb": _vmhwm_mb(), "version": version}, open(out + ".json", "w"))
'''


def peer_library(model: str) -> str | None:
    """The ``peers:`` key a model needs, or None for a dpsynth model."""
    return PEERS[model][0] if model in PEERS else None


def fit_and_sample(run, train, schema, *, python: str, time_s: float | None = None) -> tuple[Any, dict[str, Any]]:
    """Fit peer ``run.model`` on ``train`` in ``python`` and return (synthetic frame, facts: fit_s, sample_s,
    peak_mb, version); a failure of the peer is an :class:`InputError` with its last line."""
    import pandas as pd

    library, library_name, private = PEERS[run.model]
    if private == math.isinf(run.epsilon):
        want = "a finite epsilon" if private else "epsilon inf (it is not differentially private)"
        raise InputError(f"{run.model} runs at {want}. Found epsilon {run.epsilon:g}.")
    kinds = {c.name: c.is_discrete for c in schema.columns}
    meta = {"categorical": [c for c, d in kinds.items() if d], "continuous": [c for c, d in kinds.items() if not d],
            "epsilon": run.epsilon, "delta": run.delta, "seed": run.seed, "params": run.params, "rows": PEER_ROWS,
            "preprocessor_share": PREPROCESSOR_SHARE, "threads": int(os.environ.get("OMP_NUM_THREADS", "1")),
            "library_name": library_name, "private": private}
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
