"""DP-SGD from a file for the autoencoder family (dp-tldm, dp-vae, dp-auto-gan): ``backend="duckdb"`` runs the
metadata phase in the engine, encodes the rows onto disk (:mod:`dpsynth.data.row_store`) and reads each step's Poisson
sample by position. The conditional GAN family's file path is tested in test_dtgan.py.

Each test holds a fit from a frame and a fit from a Parquet file of the same rows to the same DP metadata, plan,
noise and ledger, and checks that the rows on disk are the frame path's encoding and that each DP-SGD step reads its
sample, and only that, once."""

from __future__ import annotations

import numpy as np
import pytest

from dpsynth.data.frame import conform
from dpsynth.data.row_store import EncodedRows
from dpsynth.models import get_model_class


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=1).reset_index(drop=True)


@pytest.fixture
def disk_reads(monkeypatch):
    """(sizes of the reads from rows on disk, the encoded rows kept as they were before the store was closed)."""
    reads, kept = [], {}
    read, close = EncodedRows.__getitem__, EncodedRows.close

    def keep_and_close(self):
        kept["x"] = read(self, np.arange(len(self)))
        close(self)

    monkeypatch.setattr(EncodedRows, "__getitem__", lambda self, idx: reads.append(len(idx)) or read(self, idx))
    monkeypatch.setattr(EncodedRows, "close", keep_and_close)
    return reads, kept


@pytest.mark.parametrize("name, extra", [
    ("dp-tldm", {}), ("dp-auto-gan", {}), ("dp-auto-gan", {"encoder": "frozen", "critic_loss": "wgan-gp"}),
    pytest.param("dp-vae", {}, marks=[pytest.mark.slow(reason="dp-tldm covers its VAE phase, about 8 s"),
                                       pytest.mark.ci])])
def test_a_fit_from_a_parquet_file_reads_its_rows_from_disk_with_the_frame_fits_plan(name, extra, small,
                                                                                     adult_schema, tmp_path,
                                                                                     disk_reads):
    reads, kept = disk_reads
    path = tmp_path / "adult.parquet"
    small.to_parquet(path)
    cls = get_model_class(name)
    params = {**cls.fast_params, **extra}
    from_frame = cls(**params).fit(small, epsilon=1.0, delta=1e-5, schema=adult_schema, seed=0)
    assert reads == []  # a frame fit keeps its rows in memory
    from_file = cls(**params, backend="duckdb").fit(str(path), epsilon=1.0, delta=1e-5, schema=adult_schema,
                                                    seed=0)
    # the same metadata release (same code, same draws), hence the same phases, steps, noise and composed epsilon
    assert from_file.budget_ == from_frame.budget_
    steps = sum(info["steps_taken"] for info in from_file.budget_["phases"].values())
    assert len(reads) == steps  # one read per DP-SGD step ...
    assert sum(reads) < 0.2 * steps * len(small)  # ... of that step's Poisson sample only
    expected = from_file.transformer_.transform(conform(small, adult_schema), rng=np.random.default_rng(0))
    np.testing.assert_allclose(kept["x"].numpy(), expected, rtol=1e-6, atol=1e-6)  # the frame path's encoding
    synthetic = from_file.sample(100, seed=0)
    assert list(synthetic.columns) == list(adult_schema.names) and len(synthetic) == 100


@pytest.mark.parametrize("name", ["dp-tldm", "dp-auto-gan"])
def test_an_unknown_backend_is_refused_in_one_line(name):
    from dpsynth.errors import InputError

    with pytest.raises(InputError, match="backend must be one of numpy, duckdb, spark"):
        get_model_class(name)(backend="polars").check_params()
