"""Deep models from a file: dp-tldm, dp-vae, dp-auto-gan, dp-tabddpm, dp-syn and the row generators (dp-wgan, dp-gan,
dp-dnn, dp-gan-dnn, pate-gan, pate-ctgan). ``backend="duckdb"`` runs the metadata phase in the engine, encodes the
rows onto disk (:mod:`dpsynth.data.row_store`) and reads each step's sample by position. The conditional GAN family's
file path is tested in test_dtgan.py.

Each test holds a fit from a frame and a fit from a Parquet file of the same rows to the same DP metadata, plan,
noise and ledger, and checks that the rows on disk are the frame path's encoding and that each step reads its sample,
and only that, once."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpsynth.data.frame import conform
from dpsynth.data.row_store import EncodedRows
from dpsynth.models import get_model_class


@pytest.fixture(scope="module")
def small(adult):
    train, _ = adult
    return train.sample(1000, random_state=1).reset_index(drop=True)


@pytest.fixture
def disk_reads(monkeypatch):
    """(rows of each read from rows on disk, the encoded rows kept as they were before the store was closed)."""
    reads, kept = [], {}
    read, close = EncodedRows.__getitem__, EncodedRows.close

    def counted(self, idx):
        rows = read(self, idx)
        reads.append(rows.shape[:-1].numel())
        return rows

    def keep_and_close(self):
        kept["x"] = read(self, np.arange(len(self)))
        close(self)

    monkeypatch.setattr(EncodedRows, "__getitem__", counted)
    monkeypatch.setattr(EncodedRows, "close", keep_and_close)
    return reads, kept


def _planned_rows(model) -> float:
    return sum(info["batch_size"] * info["steps_taken"] for info in model.budget_["phases"].values()
               if "steps_taken" in info)


# what a fit from a file may read: (number of reads, at most how many rows in all; None: not bounded here)
def _dp_sgd_steps(model, n):  # one read per DP-SGD step, of its Poisson sample only (expected size: the batch)
    return sum(info["steps_taken"] for info in model.budget_["phases"].values()), 1.3 * _planned_rows(model)


def _teacher_steps(model, n):  # PATE: one read per teacher step (every teacher's rows of that step at once)
    return model.iterations * model.teacher_iters, None


def _steps_and_em_passes(model, n):  # DP-syn: its DP-SGD steps, then one pass over the rows per DP-EM round
    steps = sum(info["steps_taken"] for info in model.budget_["phases"].values() if "steps_taken" in info)
    return steps + model.em_iterations, 1.3 * _planned_rows(model) + model.em_iterations * n


@pytest.mark.parametrize("name, extra, steps", [
    ("dp-auto-gan", {}, _dp_sgd_steps), ("pate-gan", {}, _teacher_steps), ("dp-syn", {}, _steps_and_em_passes),
    *[pytest.param(name, extra, steps, marks=[pytest.mark.slow(reason="a sibling covers most of its path, 3-25 s"),
                                              pytest.mark.ci])
      for name, extra, steps in [
          ("dp-tldm", {}, _dp_sgd_steps), ("dp-vae", {}, _dp_sgd_steps),
          ("dp-auto-gan", {"encoder": "frozen", "critic_loss": "wgan-gp"}, _dp_sgd_steps),
          ("dp-tabddpm", {"noise_draws": 2}, _dp_sgd_steps), ("dp-wgan", {}, _dp_sgd_steps),
          ("dp-gan", {}, _dp_sgd_steps), ("dp-dnn", {}, _dp_sgd_steps), ("dp-gan-dnn", {}, _dp_sgd_steps),
          ("pate-ctgan", {}, _teacher_steps)]]])
def test_a_fit_from_a_parquet_file_reads_its_rows_from_disk_with_the_frame_fits_plan(name, extra, steps, small,
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
    assert from_file.ledger_.epsilon() == pytest.approx(from_frame.ledger_.epsilon())
    n_reads, most_rows = steps(from_file, len(small))
    assert len(reads) == n_reads
    if most_rows is not None:
        assert sum(reads) < most_rows
    expected = from_file.transformer_.transform(conform(small, adult_schema), rng=np.random.default_rng(0))
    np.testing.assert_allclose(kept["x"].numpy(), expected, rtol=1e-6, atol=1e-6)  # the frame path's encoding
    synthetic = from_file.sample(100, seed=0)
    assert list(synthetic.columns) == list(adult_schema.names) and len(synthetic) == 100
    assert not hasattr(from_file, "_rows_on_disk")  # nothing of the fit's rows stays on the model


def test_rows_on_disk_index_like_a_tensor_of_rows():
    """Any shape of positions gives that shape of rows (PATE's teachers index (teachers, batch) at once); a slice
    is a block of rows (DP-syn's passes), clipped to the rows as a tensor's slice is."""
    x = torch.arange(40, dtype=torch.float32).reshape(10, 4)
    rows = EncodedRows.write([x[:6].numpy(), x[6:].numpy()], width=4)
    try:
        for idx in (torch.tensor([3, 0, 9]), torch.tensor([[1, 2], [9, 9], [0, 5]]), torch.zeros(0, dtype=torch.long),
                    np.array([[7]])):
            np.testing.assert_array_equal(rows[idx].numpy(), x[torch.as_tensor(idx)].numpy())
        for part in (slice(0, 10), slice(4, 7), slice(8, 100), slice(12, 20), slice(None), slice(1, 9, 3)):
            np.testing.assert_array_equal(rows[part].numpy(), x[part].numpy())
    finally:
        rows.close()


@pytest.mark.parametrize("name", ["dp-tldm", "dp-auto-gan", "dp-wgan", "pate-gan", "dp-dnn",
                                  "dp-tabddpm", "dp-syn"])
def test_an_unknown_backend_is_refused_in_one_line(name):
    from dpsynth.errors import InputError

    with pytest.raises(InputError, match="backend must be one of numpy, duckdb, spark"):
        get_model_class(name)(backend="polars").check_params()
