"""Any real table (issue 16): discovery never aborts a fit over one column, a pre-flight estimate refuses a table
too small for DP discovery before the metadata budget is spent, and CSV reading decides each column's type once
for the whole file."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from dpsynth._io import read_table
from dpsynth.data.discovery import plan_discovery, resolve_schema
from dpsynth.errors import InputError
from dpsynth.models.marginals import Marginals
from dpsynth.privacy.ledger import PrivacyLedger


def _awkward_table(n: int, seed: int = 0) -> pd.DataFrame:
    """The kinds of column that stopped fits on real tables: all missing, almost all missing (numeric and text),
    an identifier, beside ordinary columns (a 2-valued 36/64 split, a 4-valued status, a normal, a duration)."""
    rng = np.random.default_rng(seed)
    sparse = np.full(n, np.nan)
    sparse[:5] = rng.normal(size=5)
    rare_text = np.full(n, None, dtype=object)
    rare_text[:3] = "z"
    return pd.DataFrame({
        "all_missing": np.full(n, np.nan),
        "sparse_number": sparse,
        "sparse_text": rare_text,
        "id": [f"user-{i:06d}" for i in range(n)],
        "yes_no": rng.choice(["yes", "no"], n, p=[0.36, 0.64]),
        "status": rng.choice(["new", "open", "closed", "void"], n, p=[0.3, 0.3, 0.25, 0.15]),
        "score": rng.normal(size=n),
        "duration": rng.integers(1, 400, n),
    })


@pytest.mark.parametrize("dtypes", ["public", "private"])
def test_no_column_aborts_a_dp_fit(dtypes):
    """Every column discovery cannot release is excluded with one warning naming it, saying why and what would
    keep it; the fit goes on with the rest (ordinary low-cardinality columns among them)."""
    data = _awkward_table(5000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = Marginals().fit(data, epsilon=1.0, delta=1e-5, seed=0, dtypes=dtypes)
    hard = ("all_missing", "sparse_number", "sparse_text", "id")
    assert set(model.schema_.excluded) == set(hard)
    assert model.schema_.names == ["yes_no", "status", "score", "duration"]
    assert model.schema_["yes_no"].kind == "binary" and len(model.schema_["status"].categories) == 4
    messages = [str(w.message) for w in caught]
    for name in hard:
        said = [m for m in messages if f"Column '{name}' is excluded" in m]
        assert len(said) == 1, messages
        assert "To keep it" in said[0] and "schema" in said[0] and "epsilon" in said[0]
    sample = model.sample(100, seed=0)
    assert list(sample.columns) == model.schema_.names


def test_cli_fits_a_table_with_awkward_columns_and_names_them(tmp_path):
    path = tmp_path / "awkward.csv"
    _awkward_table(5000, seed=1).to_csv(path, index=False)
    out = tmp_path / "m.dpsynth"
    # seeded: the test is about what the CLI prints, so it must not depend on one draw of the noise (unseeded, one
    # CI run in many printed no exclusion line for all_missing; see the closing note of 2026-11-25)
    proc = subprocess.run([sys.executable, "-m", "dpsynth.cli", "fit", str(path), "--model", "marginals",
                           "--epsilon", "1", "--seed", "1", "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "DP discovery of 8 column(s)" in proc.stderr and "a category is released from about" in proc.stderr
    for name in ("all_missing", "sparse_number", "sparse_text", "id"):
        assert f"Column '{name}' is excluded" in proc.stderr, proc.stderr


def test_the_pre_flight_plan_is_what_the_fit_uses():
    """The plan's noise sd and release threshold are those of the ledger's metadata events (computed before any
    query from public facts); a value with about the planned count is released, far below it is not."""
    rng = np.random.default_rng(3)
    n = 20_000
    data = pd.DataFrame({"c": rng.choice(["a", "b"], n), "x": rng.normal(size=n), "flag": rng.random(n) < 0.3})
    plan = plan_discovery(data, epsilon=1.0, delta=1e-5, share=0.1)
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
    resolve_schema(data, None, ledger=ledger, share=0.1, rng=rng)
    # every column is kept, so stage 2 spends the planned budget: weight-1 queries at the plan's sigma (to the
    # calibration's 1e-3), the quarter-weight profile and x's zoom (the quarter held back for it) at twice it
    assert "zoom x" in [e.mechanism for e in ledger.entries]
    for e in ledger.entries:
        expected = 2 * plan.sigma if e.mechanism.startswith(("profile", "zoom")) else plan.sigma
        assert e.params["sigma"] == pytest.approx(expected, rel=2e-3), e.mechanism
    threshold = next(e.params["threshold"] for e in ledger.entries if "partition selection" in e.mechanism)
    assert threshold == pytest.approx(plan.category_rows, rel=2e-3)
    # monotone in the public facts: more columns or less budget need more rows
    wider = plan_discovery(pd.concat([data] * 3, axis=1).set_axis([f"c{i}" for i in range(9)], axis=1),
                           epsilon=1.0, delta=1e-5, share=0.1)
    assert wider.category_rows > plan.category_rows and wider.bound_rows > plan.bound_rows
    poorer = plan_discovery(data, epsilon=0.5, delta=1e-5, share=0.1)
    assert poorer.category_rows > plan.category_rows
    counts = pd.Series(["big"] * int(1.3 * plan.category_rows) + ["small"] * int(0.2 * plan.category_rows))
    released = 0
    for seed in range(20):
        ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
        schema, _ = resolve_schema(pd.DataFrame({"c": counts, "x": np.zeros(len(counts))}), None, ledger=ledger,
                                   share=0.1, rng=np.random.default_rng(seed))
        cats = schema["c"].categories if "c" in schema.names else ()
        assert "small" not in cats
        released += "big" in cats
    assert released >= 15


@pytest.mark.parametrize("dtypes", ["public", "private"])
def test_a_table_too_small_is_refused_after_the_row_count_only(dtypes):
    """30 columns of 300 rows at epsilon 1: no column could be released. The fit stops after the DP row count (the
    only event in the ledger) with the plan's numbers in one InputError line."""
    rng = np.random.default_rng(0)
    data = pd.DataFrame({f"c{i}": rng.integers(0, 3, 300) for i in range(30)})
    model = Marginals()
    with pytest.raises(InputError, match=r"too small for DP discovery.*released from about \d+ rows.*about \d+ rows "
                                         r"\(a DP estimate\).*--schema") as err:
        model.fit(data, epsilon=1.0, delta=1e-5, seed=0, dtypes=dtypes)
    assert "\n" not in str(err.value)
    assert [e.mechanism for e in model.ledger_.entries] == ["row count"]


def test_cli_refuses_a_table_too_small_in_one_line(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "small.csv"
    pd.DataFrame({f"c{i}": rng.integers(0, 3, 300) for i in range(30)}).to_csv(path, index=False)
    proc = subprocess.run([sys.executable, "-m", "dpsynth.cli", "fit", str(path), "--epsilon", "1", "--out",
                           str(tmp_path / "m.dpsynth"), "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "too small for DP discovery" in lines[0], proc.stderr
    assert not (tmp_path / "m.dpsynth").exists()


def test_csv_columns_get_one_type_for_the_whole_file(tmp_path):
    """A wide file whose column is numeric for most rows and text in the last ones: pandas' chunked default parser
    gives it floats in some chunks and strings in others; read_table decides once (text, no DtypeWarning)."""
    n = 20_000
    frame = pd.DataFrame({f"c{i}": np.arange(n) % 7 for i in range(60)})
    mixed = np.arange(n).astype(float).astype(object)
    mixed[-10:] = "x"
    frame["m"] = mixed
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a DtypeWarning would fail the test
        read = read_table(path)
    assert read["m"].map(type).eq(str).all()
    assert all(pd.api.types.is_integer_dtype(read[f"c{i}"]) for i in range(60))


@pytest.mark.parametrize("name", ["breast_cancer", "digits", "fertility", "fair", "randhie", "cars",
                                  "seattle_weather", "airports"])
def test_packaged_tables_load_as_a_csv_would_read_them(name):
    """The generality benchmark's extra tables: the registry's size and target, dates as text (no datetime
    dtype, which no model takes), and a DataFrame a fit accepts."""
    from dpsynth import datasets

    info = datasets.REGISTRY[name]
    package = info.source.split(":")[0]
    if package != "scikit-learn":
        pytest.importorskip("vega_datasets" if package == "vega" else package)  # the [bench] extra
    frame = datasets.load(name).train
    rows = int(info.rows.split(" ")[0].replace(",", ""))
    assert len(frame) == rows
    if " x " in info.rows:
        assert frame.shape[1] == int(info.rows.split(" x ")[1])
    assert info.target is None or info.target in frame.columns
    assert not any(pd.api.types.is_datetime64_any_dtype(t) for t in frame.dtypes)
    assert all(isinstance(c, str) for c in frame.columns)


def test_a_nullable_column_without_missing_values_gets_no_missing_mass():
    """Float and text columns are nullable from their dtype; with no missing value the DP missing cell is pure
    noise, read as 0 below 2 sd, so the models do not emit missing cells (issue 16: 1.4% of a column with none).
    A column with real missing values keeps its DP count."""
    rng = np.random.default_rng(5)
    n = 20_000
    holes = rng.normal(size=n)
    holes[: n // 10] = np.nan
    data = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["a", "b", "c"], n), "h": holes})
    zero = 0
    for seed in range(10):
        ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5)
        _, meta = resolve_schema(data, None, ledger=ledger, share=0.1, rng=np.random.default_rng(seed))
        zero += meta.histograms["x"].missing == 0 and meta.histograms["c"].missing == 0
        assert abs(meta.histograms["h"].missing - n // 10) < 5 * meta.sigma
    assert zero >= 8  # both cells below 2 sd: w.p. 0.977^2 each time (without the rule: never)
