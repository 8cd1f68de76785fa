"""Seed 001's tabular experiment (Lu & Yu 2017, Figs. 1-4) on UCI Wine: DP-DNN, DP-GAN and DP-GAN-DNN.

Wine (178 rows, 13 numeric attributes, 3 classes) is split 80/20 (seeded); each model is fitted on the 142
training rows with the poster's public knowledge (value ranges and classes: the schema proposed from the whole
table, taken as public) over a grid of epsilon and delta, ``--reps`` times (seeds 0..reps-1), and scored by

- ``acc``: classification accuracy of a random forest trained on the synthetic rows (as many as the DP row
  count) and tested on the real hold-out (the poster's "classification accuracy"); ``real`` trains on the real
  training rows;
- ``bhatt``: Bhattacharyya distance ``-ln sum sqrt(p q)`` between real and synthetic 1-way histograms (real
  deciles as bins), mean over the 14 columns (0 is identical; the poster's dissimilarity);
- ``s``: seconds per fit.

``--figure PATH`` writes the correlation matrices (Pearson, the class as its code) of the real training rows and of
one release of each model at the first grid point side by side (seed 001's Fig. 2) as a PNG; ``--report PATH``
writes the table and that figure as dpsynth's HTML report.

At 142 rows, epsilon buys little: DP-SGD's noise on the mean gradient is ``sigma C / B`` with ``B`` at most a few
dozen rows, so at epsilon <= 1 the networks learn close to nothing, and the labels of DP-DNN follow its random
initialisation. The table reports what happens, not what the poster's figures show.

Examples::

    python benchmarks/unified_wine.py --epsilons 1 --deltas 1e-5 --reps 10 --figure wine.png --report wine.html
    python benchmarks/unified_wine.py                     # the grid: epsilon 0.1 1 10 x delta 1e-5 1e-3, 10 reps
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

MODELS = ("dp-dnn", "dp-gan", "dp-gan-dnn")


def wine() -> tuple[pd.DataFrame, pd.DataFrame, object]:
    from dpsynth import datasets
    from dpsynth.data.inference import infer_schema

    table = datasets.load("wine").train
    table["target"] = "class_" + table["target"].astype(str)  # the label as a category, as the poster predicts it
    train, test = datasets.Dataset(datasets.REGISTRY["wine"], table).split(seed=0)
    return train, test, infer_schema(table, target="target", warn=False).reviewed()


def accuracy(train: pd.DataFrame, test: pd.DataFrame) -> float:
    from sklearn.ensemble import RandomForestClassifier

    features = [c for c in test.columns if c != "target"]
    if train["target"].nunique() < 2:  # one class: the constant predictor
        return float((test["target"] == train["target"].iloc[0]).mean())
    forest = RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1)
    forest.fit(train[features].astype(float), train["target"].astype(str))
    return float((forest.predict(test[features].astype(float)) == test["target"].astype(str)).mean())


def bhattacharyya_mean(real: pd.DataFrame, synth: pd.DataFrame) -> float:
    from dpsynth.evaluation.unsupervised import bhattacharyya, decile_bins

    out = []
    for c in real.columns:
        if c == "target":
            cats = sorted(real[c].unique())
            p = real[c].value_counts(normalize=True).reindex(cats, fill_value=0).to_numpy()
            q = synth[c].value_counts(normalize=True).reindex(cats, fill_value=0).to_numpy()
        else:
            a, b = decile_bins(real[c], synth[c], "numeric")
            k = int(max(a.max(), b.max(initial=0))) + 1  # code -1 (a missing number) is in no bin
            p = np.bincount(a[a >= 0], minlength=k) / len(real)
            q = np.bincount(b[b >= 0], minlength=k) / max(len(synth), 1)
        out.append(bhattacharyya(p, q))
    return float(np.mean(out))


def correlation_figure(frames: dict[str, pd.DataFrame]):
    """Seed 001's Fig. 2 as a matplotlib figure (the caller saves or embeds it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(frames), figsize=(3.2 * len(frames), 3.4))
    for ax, (name, frame) in zip(axes, frames.items()):
        numbers = frame.assign(target=frame["target"].astype("category").cat.codes).astype(float)
        corr = numbers.corr().fillna(0.0).to_numpy()
        ax.imshow(corr, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Wine: Pearson correlations (14 attributes, class last)", fontsize=9)
    fig.tight_layout()
    return fig


def write_outputs(args, table: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> None:
    """The PNG (``--figure``) and the HTML report (``--report``: the table and the figure, dpsynth's template)."""
    if args.figure:
        from dpsynth._io import atomic_write

        atomic_write(args.figure, lambda tmp: correlation_figure(frames).savefig(tmp, dpi=110, format="png"))
        print(f"figure -> {args.figure}")
    if args.report:
        from dpsynth.evaluation.figures import to_data_uri
        from dpsynth.evaluation.report import table_html, write_report

        image = f'<img alt="correlation matrices" src="{to_data_uri(correlation_figure(frames))}">'
        sections = [("Seed 001's Wine experiment", table_html(table.to_dict(orient="records"), list(table.columns))),
                    ("Correlation matrices (seed 001, Fig. 2)", image)]
        write_report(args.report, None, extra_sections=sections, title="dpsynth: seed 001's Wine experiment")
        print(f"report -> {args.report}")


def main() -> None:
    import dpsynth

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--epsilons", default="0.1,1,10")
    ap.add_argument("--deltas", default="1e-5,1e-3")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--figure", help="write seed 001's Fig. 2 (correlation matrices) here (PNG)")
    ap.add_argument("--report", help="write the table and the figure as an HTML report here")
    ap.add_argument("--out", help="also write the table as CSV")
    args = ap.parse_args()
    train, test, schema = wine()
    rows = [{"model": "real", "epsilon": "-", "delta": "-", "acc": f"{accuracy(train, test):.3f}",
             "bhatt": f"{bhattacharyya_mean(train, train):.3f}", "s": "-"}]
    print(pd.DataFrame(rows).to_string(index=False), flush=True)
    figure = {"real": train}
    for epsilon in (float(e) for e in args.epsilons.split(",")):
        for delta in (float(d) for d in args.deltas.split(",")):
            for name in args.models.split(","):
                acc, bd, secs = [], [], []
                for rep in range(args.reps):
                    t0 = time.perf_counter()
                    model = dpsynth.get_model_class(name)().fit(train, epsilon=epsilon, delta=delta, schema=schema,
                                                                seed=rep)
                    secs.append(time.perf_counter() - t0)
                    synth = model.sample(seed=rep)  # the DP row count
                    acc.append(accuracy(synth, test))
                    bd.append(bhattacharyya_mean(train, synth))
                    if rep == 0 and len(figure) <= len(args.models.split(",")):
                        figure.setdefault(name, synth)
                rows.append({"model": name, "epsilon": epsilon, "delta": delta,
                             "acc": f"{np.mean(acc):.3f} ± {np.std(acc):.3f}",
                             "bhatt": f"{np.mean(bd):.3f} ± {np.std(bd):.3f}", "s": f"{np.mean(secs):.1f}"})
                print(pd.DataFrame(rows[-1:]).to_string(index=False, header=False), flush=True)
    table = pd.DataFrame(rows)
    print()
    print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)
    write_outputs(args, table, figure)


if __name__ == "__main__":
    main()
