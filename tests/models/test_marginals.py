"""The promises the README makes about the `marginals` model's ledger, the metadata share, seeds and model files
(issue 14, item 5)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from dp_accounting import dp_event

from dpsynth.errors import InputError
from dpsynth.models import get_model_class, load_model
from dpsynth.models.marginals import Marginals
from dpsynth.privacy.accounting import epsilon_of

EPS, DELTA = 1.0, 1e-5


@pytest.fixture(scope="module")
def train(adult):
    return adult[0].sample(3000, random_state=0).reset_index(drop=True)


def _fit(train, schema=None, **kw):
    return Marginals().fit(train, epsilon=EPS, delta=DELTA, schema=schema, **{"seed": 0, **kw})


def _phase_epsilon(model, phase: str, delta: float) -> float:
    pairs = [(dp_event.GaussianDpEvent(e.params["sigma"]), e.count) for e in model.ledger_.entries
             if e.phase == phase]
    return epsilon_of(pairs, delta)


def test_ledger_phases_one_marginal_per_column_and_the_whole_budget(train, adult_schema):
    model = _fit(train, adult_schema)
    ledger = model.ledger_
    assert set(ledger.phases()) == set(Marginals.phases) == {"metadata", "marginals"}
    marginals = [e for e in ledger.entries if e.phase == "marginals"]
    assert sorted(e.mechanism for e in marginals) == sorted(f"histogram {c}" for c in model.schema_.names)
    assert all(e.count == 1 and e.params["sensitivity"] == 1.0 for e in marginals)
    assert 0.99 * EPS <= ledger.epsilon() <= EPS + 1e-9


@pytest.mark.parametrize("share", [0.05, 0.1, 0.5])
def test_metadata_share_splits_the_budget(train, adult_schema, share):
    """The metadata phase alone is (share * epsilon, delta / 2)-DP (discovery.calibrate_metadata_sigma); the
    marginals take what is left, so the whole fit still spends >= 99% of epsilon."""
    model = _fit(train, adult_schema, metadata_share=share)
    meta = _phase_epsilon(model, "metadata", DELTA / 2)
    assert 0.97 * share * EPS <= meta <= share * EPS + 1e-9
    assert 0.99 * EPS <= model.ledger_.epsilon() <= EPS + 1e-9
    assert model.fit_info_["metadata_share"] == share


@pytest.mark.parametrize("share", [0, 1, 0.0, 1.0, -0.1, 1.5])
def test_metadata_share_of_zero_or_one_is_refused(train, share):
    with pytest.raises(InputError, match="metadata_share"):
        _fit(train, metadata_share=share)


@pytest.mark.parametrize("share", ["0", "1"])
def test_cli_metadata_share_of_zero_or_one_is_refused(tmp_path, train, share):
    data = tmp_path / "d.csv"
    train.to_csv(data, index=False)
    done = subprocess.run([sys.executable, "-m", "dpsynth.cli", "fit", str(data), "--model", "marginals",
                           "--epsilon", "1", "--metadata-share", share, "--out", str(tmp_path / "m.dpsynth")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "metadata" in done.stderr
    assert not (tmp_path / "m.dpsynth").exists()


def test_the_seed_never_reaches_the_model_file(train, adult_schema, tmp_path):
    seed = 918273645
    model = _fit(train, adult_schema, seed=seed)
    path = tmp_path / "m.dpsynth"
    model.save(path)
    raw = path.read_bytes()
    assert str(seed).encode() not in raw
    for width in (4, 8):
        for order in ("little", "big"):
            assert seed.to_bytes(width, order) not in raw
    assert load_model(path).fit_info_["seeded"] is True
    assert _fit(train, adult_schema, seed=None).fit_info_["seeded"] is False


def test_two_unseeded_fits_differ(train, adult_schema):
    a = _fit(train, adult_schema, seed=None).sample(500, seed=0)
    b = _fit(train, adult_schema, seed=None).sample(500, seed=0)
    assert not a.equals(b)


@pytest.mark.parametrize("name", ["marginals", pytest.param("dp-tldm", marks=[  # the contract refits it with its seed
    pytest.mark.slow(reason="three DP-TLDM fits, about 20 s"), pytest.mark.ci]), "dp-auto-gan"])
def test_a_seeded_fit_is_reproducible(name, adult_small, adult_schema):
    cls = get_model_class(name)
    data = adult_small.iloc[:1000]

    def fit():
        return cls(**cls.fast_params).fit(data, epsilon=EPS, delta=DELTA, schema=adult_schema, seed=5)

    first, second = fit(), fit()
    pd.testing.assert_frame_equal(first.sample(300, seed=1), second.sample(300, seed=1))
    assert first.ledger_.to_dict() == second.ledger_.to_dict()
    other = cls(**cls.fast_params).fit(data, epsilon=EPS, delta=DELTA, schema=adult_schema, seed=6)
    assert not other.sample(300, seed=1).equals(first.sample(300, seed=1))  # the seed is what makes it so


@pytest.mark.parametrize("schema_given", [True, False])
def test_a_file_counted_in_duckdb_gives_the_frames_histograms(train, adult_schema, tmp_path, schema_given):
    """backend="duckdb": every histogram is counted where the rows live (one GROUP BY per column), with the same
    cells and the same draws as from the frame: the same seed gives the same histograms and ledger. Without a schema,
    DP discovery runs in the engine too."""
    import numpy as np

    path = tmp_path / "adult.parquet"
    train.to_parquet(path)
    schema = adult_schema if schema_given else None
    from_frame = _fit(train, schema)
    from_file = Marginals(backend="duckdb").fit(str(path), epsilon=EPS, delta=DELTA, schema=schema, seed=0)
    assert from_file.ledger_.epsilon() == pytest.approx(from_frame.ledger_.epsilon())
    assert list(from_file.histograms_) == list(from_frame.histograms_)
    for name, hist in from_frame.histograms_.items():
        np.testing.assert_allclose(from_file.histograms_[name].counts, hist.counts, rtol=1e-9, atol=1e-6)
    assert len(from_file.sample(200, seed=1)) == 200


def test_stretches_beyond_the_rows_are_drawn_at_their_unclipped_sums():
    """Bounds from DP discovery are whole decades: with the clipped counts, 57 empty grid bins beside California's
    latitudes drew ~0.4 noise sd of rows each (2,800 rows on average here); at their unclipped sums (unbiased,
    clipped at 0 as a whole) the empty stretches get a sixth of that (490), and a thin real tail of 1,200 rows gets
    1,360 on average where the clipped counts gave it 3,480."""
    import numpy as np

    from dpsynth.data.metadata import NumericHistogram
    from dpsynth.models.marginals import _stretches_at_their_sums

    edges, sigma = np.linspace(10.0, 100.0, 65), 171.0
    true = np.zeros(64)
    true[16:23] = [500, 2000, 4000, 3000, 2000, 1000, 300]
    empty_before, empty_after, tail_kept = [], [], []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        for tail in (0.0, 60.0):  # empty above the rows, or 60 real rows in each of the next 20 bins
            rows = true.copy()
            rows[23:43] = tail
            noisy = rows + rng.normal(0.0, sigma, 64)
            hist = NumericHistogram(edges, np.clip(noisy, 0, None), {}, 0.0, noisy=noisy, bin_sd=np.full(64, sigma))
            scaled = _stretches_at_their_sums(hist)
            assert np.allclose(scaled[17:22], hist.counts[17:22])  # bins beyond 4 noise sds: never rescaled
            if tail:
                tail_kept.append(scaled[23:].sum() / 1200.0)
            else:
                empty_before.append(hist.counts[23:].sum())
                empty_after.append(scaled[23:].sum())
    assert np.mean(empty_after) < 0.25 * np.mean(empty_before)
    assert 0.7 < np.mean(tail_kept) < 1.6  # 1,200 rows the noise hides bin by bin: about kept


def test_the_released_row_count_pools_every_histogram(train, adult_schema, tmp_path):
    """The row count `marginals` publishes (and samples by default) pools the metadata's DP row count with the row
    total of each of its own histograms (the whole budget left, one Gaussian count of every row per column): on 3,000
    Adult rows at epsilon 1 its RMS error over six seeds is under 0.4 of the row-count query's noise sd (measured:
    0.14; the metadata's pooled count alone has 0.63 of it), it is what the budget reports, and a saved model keeps
    it. Post-processing: the ledger is the same."""
    import math

    import numpy as np

    errors, query_sds = [], []
    for seed in range(6):
        model = _fit(train, adult_schema, seed=seed)
        assert model.budget_["n_rows_dp"] == pytest.approx(model.total_)
        assert model.row_count_ == round(model.total_) and len(model.sample(seed=0)) == model.row_count_
        errors.append(model.total_ - len(train))
        query_sds.append(next(e.params["sigma"] for e in model.ledger_.entries if e.mechanism == "row count"))
    assert math.sqrt(np.mean(np.square(errors))) < 0.4 * np.mean(query_sds), (errors, query_sds)
    model.save(tmp_path / "m.dpsynth")
    assert load_model(tmp_path / "m.dpsynth").row_count_ == model.row_count_
