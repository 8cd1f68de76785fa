"""The README's "Every model on Adult" table from the results file of ``benchmarks/specs/every_model.yaml``.

A reshaping of ``dpsynth bench report R.duckdb --metric ml_efficacy.auc.synthetic:lr``: one row per model, epsilon 1
and inf side by side, in the spec's model order, as a Markdown table.

    python benchmarks/every_model_table.py benchmarks/results/every_model.duckdb
"""

from __future__ import annotations

import argparse
from pathlib import Path

LR_AUC = "ml_efficacy.auc.synthetic:lr"


def _number(cell: str, digits: int) -> str:
    """``mean`` or ``mean ± std`` as the report prints it, to ``digits`` decimals ('-' stays '-')."""
    if cell == "-":
        return "-"
    parts = [float(p) for p in cell.split(" ± ")]
    text = f"{parts[0]:.{digits}f}"
    return text + (f" ± {parts[1]:.{digits}f}" if len(parts) == 2 else "")


def table(results: str, spec: str) -> str:
    from dpsynth.bench import ResultStore, load_spec
    from dpsynth.bench.report import summary

    order = list(dict.fromkeys(run.label for run in load_spec(spec).runs))
    with ResultStore(results, read_only=True) as store:
        frame = summary(store.runs(), store.metrics(), [LR_AUC])
    lines = ["| model | seeds | epsilon 1: XGB AUC | LR AUC | 1-way TVD | 2-way TVD | fit (s) | epsilon inf: XGB AUC | "
             "2-way TVD | fit (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for model in order:
        private = frame[(frame["label"] == model) & (frame["epsilon"] == "1")]
        exact = frame[(frame["label"] == model) & (frame["epsilon"] == "inf")]
        if private.empty and exact.empty:
            continue
        seeds = "/".join(r.iloc[0]["runs"].split()[0] for r in (private, exact) if not r.empty)
        cells = [f"`{model}`", seeds]
        if private.empty:
            cells += ["(not private)", "", "", "", ""]
        else:
            r = private.iloc[0]
            cells += [_number(r["auc_xgb"], 3), _number(r[LR_AUC], 3), _number(r["tvd1"], 3), _number(r["tvd2"], 3),
                      _number(r["fit_s"], 0)]
        if exact.empty:
            cells += ["not yet run", "", ""]
        else:
            r = exact.iloc[0]
            cells += [_number(r["auc_xgb"], 3), _number(r["tvd2"], 3), _number(r["fit_s"], 0)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", help="the results file (DuckDB) of every_model.yaml")
    parser.add_argument("--spec", default=str(Path(__file__).parent / "specs" / "every_model.yaml"))
    args = parser.parse_args()
    print(table(args.results, args.spec))


if __name__ == "__main__":
    main()
