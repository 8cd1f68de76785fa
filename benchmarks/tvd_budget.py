"""Where a select-measure-generate model's 2-way TVD on Adult comes from (issue 18's target: <= 0.02 at epsilon 1).

Fits one model (``--model``, default ``batch-aim``) on the Adult train split at ``--epsilon`` and splits its
2-way TVD (``adult_quality.py``'s metric: numeric columns cut at deciles of the real column) into parts, each
measured, none guessed:

- **sample at N / at 10 N rows**: the released sample against the train split, and ten times as many rows from
  the same model (what is left when the sampling noise is gone: the model's own error);
- **binning floor**: the real train split encoded into the model's cells and decoded again (numbers drawn inside
  their bins as the sampler does): what the cells cost with no noise and no model at all;
- **bootstrap**: the train split resampled against itself: what N rows of a perfect model would score;
- **cells, measured / not**: the model's 2-way marginals against the exact ones in the model's own cells, for the
  pairs inside a measured clique and the others (inferred through the junction tree);
- **oracle link** for the column in no measured pair with the largest mean pair TVD (on Adult, native-country):
  that column of the sample redrawn from its *true* conditional given each other column in turn — an upper bound
  on what measuring one more pair for it could buy (it would also cost budget the other pairs now get).

Run: ``python benchmarks/tvd_budget.py [--model batch-aim] [--epsilon 1] [--seed 0] [--threads 1]``. This reads
the exact train split, so it is a benchmark, not a release.

Measured 2026-11-28 (``batch-aim``, epsilon 1, seed 0, one thread, the other core busy; fit 111 s)::

    sample at N rows                0.0220
    sample at 10 N rows             0.0210
    binning floor, max_bins 16      0.0080
    binning floor, max_bins 32      0.0053   (the default)
    binning floor, max_bins 64      0.0050
    bootstrap (perfect model)       0.0095
    cells, 44 pairs measured        0.0176
    cells, 61 pairs not measured    0.0287
    native-country is in no measured pair; its 14 pairs' mean TVD 0.0351; oracle link given education 0.0202
    (the best parent), race 0.0206, occupation 0.0208, the others 0.0209-0.0210

Again after numbers were decoded from smoothed fine counts and a frequency polygon (2026-11-28, later, seed 0, one
thread, the other core running tests; fit 70 s): sample at N / 10 N rows 0.0212 / 0.0203, binning floor 0.0067 /
0.0043 / 0.0044 at max_bins 16 / 32 / 64, the cells' parts unchanged (0.0176 and 0.0287: the fit is the same),
oracle link for native-country given education 0.0195.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import pandas as pd
from adult_quality import _discretise, _schema, marginal_tvd, parse_params


def pair_tvds(real: pd.DataFrame, synth: pd.DataFrame) -> pd.DataFrame:
    """TVD of every 2-way marginal (deciles for numbers), a row per pair."""
    a, b = _discretise(real, synth)
    rows = []
    for pair in itertools.combinations(a.columns, 2):
        p = a.groupby(list(pair)).size() / len(a)
        q = b.groupby(list(pair)).size() / max(len(b), 1)
        rows.append((*pair, 0.5 * float(p.sub(q, fill_value=0).abs().sum())))
    return pd.DataFrame(rows, columns=["a", "b", "tvd"])


def cell_tvds(model, train: pd.DataFrame) -> pd.DataFrame:
    """The model's 2-way marginals against the exact ones in its own cells, a row per pair."""
    from dpsynth.marginals.backends import NumPyBackend

    disc = model.discretizer_
    counts = NumPyBackend(disc.encode(train), disc.sizes)
    cliques = [set(c) for c in model.model_.cliques]
    rows = []
    for i, j in itertools.combinations(range(len(disc.names)), 2):
        p = counts.counts((i, j)).astype(float)
        q = np.clip(np.asarray(model.model_.project((i, j)), float), 0, None)
        tvd = 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())
        rows.append((disc.names[i], disc.names[j], tvd, any({i, j} <= c for c in cliques)))
    return pd.DataFrame(rows, columns=["a", "b", "tvd", "measured"])


def oracle_link(synth: pd.DataFrame, train: pd.DataFrame, column: str, parent: str, seed: int) -> pd.DataFrame:
    """``synth`` with ``column`` redrawn from the train split's exact P(column | parent) (benchmark only)."""
    rng = np.random.default_rng(seed)
    out = synth.copy()
    cond = train.groupby(parent, observed=True)[column].value_counts(normalize=True, dropna=False)
    values = out[column].astype(object).to_numpy().copy()
    for group, idx in out.groupby(parent, observed=True).groups.items():
        if group not in cond.index.get_level_values(0):
            continue
        dist = cond.loc[group]
        values[out.index.get_indexer(idx)] = rng.choice(np.array(dist.index, dtype=object), size=len(idx),
                                                        p=dist.to_numpy())
    out[column] = pd.Series(values, index=out.index).astype(train[column].dtype)
    return out


def main(argv: list[str] | None = None) -> None:
    import torch

    from dpsynth.datasets import load
    from dpsynth.marginals.domain import Discretizer
    from dpsynth.models import get_model_class

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="batch-aim")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--param", action="append", default=[], help="hyper-parameter key=value (repeatable)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    train, _ = load("adult").split()
    model = get_model_class(args.model)(**parse_params(args.param))
    t0 = time.perf_counter()
    model.fit(train, epsilon=args.epsilon, delta=1e-5, seed=args.seed, schema=_schema(train))
    print(f"{args.model} at epsilon {args.epsilon}, seed {args.seed}: fit {time.perf_counter() - t0:.0f} s")

    synth = model.sample(n=len(train), seed=args.seed + 1000)
    big = model.sample(n=10 * len(train), seed=args.seed + 2000)
    disc = model.discretizer_
    rows = [("sample at N rows", marginal_tvd(train, synth)["tvd2"]),
            ("sample at 10 N rows", marginal_tvd(train, big)["tvd2"])]
    for max_bins in sorted({model.max_bins, 16, 64}):
        cells = Discretizer.build(model.schema_, model.metadata_, max_bins)
        rows.append((f"binning floor, max_bins {max_bins}",
                     marginal_tvd(train, cells.decode(cells.encode(train), np.random.default_rng(0)))["tvd2"]))
    rows.append(("bootstrap (perfect model)",
                 marginal_tvd(train, train.sample(frac=1, replace=True, random_state=args.seed))["tvd2"]))
    cells = cell_tvds(model, train)
    for measured, label in ((True, "measured"), (False, "not measured")):
        part = cells[cells.measured == measured]
        rows.append((f"cells, {len(part)} pairs {label}", part.tvd.mean() if len(part) else float("nan")))
    print(pd.DataFrame(rows, columns=["part", "2-way TVD"]).to_string(index=False, float_format="{:.4f}".format))

    pairs = pair_tvds(train, big)
    print("\nworst pairs (10 N rows):")
    print(pairs.sort_values("tvd", ascending=False).head(10).to_string(index=False, float_format="{:.4f}".format))
    measured_cols = {disc.names[a] for c in model.model_.cliques if len(c) >= 2 for a in c}
    lonely = [c for c in disc.names if c not in measured_cols]
    if not lonely:
        return
    worst = max(lonely, key=lambda c: pairs[(pairs.a == c) | (pairs.b == c)].tvd.mean())
    mean = pairs[(pairs.a == worst) | (pairs.b == worst)].tvd.mean()
    print(f"\n{worst} is in no measured pair; its pairs' mean TVD {mean:.4f}. Oracle link (exact conditional, "
          "categorical parents):")
    for parent in [c for c in train.columns if c != worst and not pd.api.types.is_numeric_dtype(train[c])]:
        linked = oracle_link(synth, train, worst, parent, args.seed)
        print(f"  given {parent:16s} 2-way TVD {marginal_tvd(train, linked)['tvd2']:.4f}")


if __name__ == "__main__":
    main()
