"""Seed 001's tabular models (Lu & Yu 2017, §2.2-2.4): DP-DNN and DP-GAN-DNN.

- ``dp-dnn``: a fully connected network trained with DP-SGD to predict one attribute (the schema's target; without
  one, a column picked with public randomness, as the poster "randomly picks an attribute as a label") from the
  others. Synthesis is post-processing: the other attributes are drawn uniformly - numbers within their public or
  DP-discovered ranges (the minmax encoding's [-1, 1], the poster's first refinement), categories uniformly among
  the public or DP categories - and labelled with the network's prediction. ``keep_label_proportions=True`` is the
  poster's second refinement: a candidate whose predicted label would push that label past its share of the DP
  label counts is dropped (candidates are drawn until every label's quota is met or ``max_rounds`` batches pass;
  then the remaining rows are filled with the last candidates, so the model always returns ``n`` rows).
- ``dp-gan-dnn``: DP-GAN rows (``dp-gan``'s DP-SGD discriminator and post-processing generator) in place of the
  uniform draws, labelled by the DP-DNN. The two trainings are composed in one ledger: the GAN's phase is
  calibrated to ``spent + gan_share * (target - spent)`` (``spent``: the metadata phase), the DNN's to the rest;
  ``gan_share`` is a hyper-parameter recorded in ``budget_``.

Privacy (neighbouring relation: add/remove one row): the metadata phase as every model; the DNN phase is DP-SGD
with Poisson sampling at ``q = B / n_dp`` and per-example clipping of the row's whole prediction loss (the row's
other attributes are its input, its label the loss target: one clipped unit), recorded in ``ledger_`` (phase
``"dnn"``); the GAN phase is ``dp-gan``'s (phase ``"gan"``). What the poster leaves open and is fixed here: the
value ranges and label proportions it uses are read off the data in the poster; here they are the public schema
or DP metadata.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._auto_gan_train import train_gan
from dpsynth.models._row_generator import RowGeneratorModel, as_layers
from dpsynth.models.networks.autoencoder import mlp, reconstruction_loss
from dpsynth.models.networks.gan import Critic
from dpsynth.models.phase import DPPhase, budget_summary, choose_width

__all__ = ["DPDNN", "DPGANDNN", "label_quota_filter"]

LARGEST_BATCH, MIN_STEPS = 512, 500
DNN_WIDTH = 128
CALIBRATION_RTOL = 0.01
_CANDIDATES = 4096


def label_quota_filter(labels: np.ndarray, quota: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """Indices of the candidates to keep, in order: a candidate of label ``y`` is kept while ``taken[y] < quota[y]``
    (``taken`` is updated in place)."""
    keep = []
    for i, y in enumerate(labels):
        if taken[y] < quota[y]:
            taken[y] += 1
            keep.append(i)
    return np.asarray(keep, dtype=np.int64)


@register
class DPDNN(RowGeneratorModel):
    """DP-DNN (module docstring). Hyper-parameters: ``hidden`` (``None``: two layers by the width rule, at most 128),
    ``epochs`` / ``batch_size`` (``None``: up to 512 rows and at least 500 steps) / ``learning_rate`` /
    ``max_grad_norm`` of the DP-SGD phase, ``keep_label_proportions`` (the poster's second refinement),
    ``max_rounds`` (candidate batches it may draw), ``calibration_accountant``, ``backend`` (``"numpy"``: a pandas
    frame in memory; ``"duckdb"`` / ``"spark"``: a Parquet / CSV path or a Spark DataFrame, its rows encoded onto
    disk and read by position; :mod:`dpsynth.data.row_store`)."""

    name = "dp-dnn"
    phases = ("metadata", "dnn")
    fast_params: dict[str, Any] = {"epochs": 1.0, "batch_size": 32, "hidden": (16,), "calibration_accountant": "rdp"}

    def __init__(
        self,
        *,
        hidden: tuple[int, ...] | None = None,
        epochs: float = 10.0,
        batch_size: int | None = None,
        learning_rate: float = 0.005,
        max_grad_norm: float = 1.0,
        keep_label_proportions: bool = False,
        max_rounds: int = 50,
        calibration_accountant: str = "pld",
        backend: str = "numpy",
    ):
        self.hidden = as_layers(hidden)
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.max_grad_norm = max_grad_norm
        self.keep_label_proportions = keep_label_proportions
        self.max_rounds = max_rounds
        self.calibration_accountant = calibration_accountant
        self.backend = backend

    numeric = "minmax"  # the poster's value ranges: every number is encoded within its public / DP bounds
    match_marginals = False

    def _check_params(self) -> None:
        if self.calibration_accountant not in ("pld", "rdp"):
            raise InputError(f"calibration_accountant must be 'pld' or 'rdp'. Found {self.calibration_accountant!r}.")

    # ------------------------------------------------------------------ the label
    def _label_column(self, rng: np.random.Generator) -> str:
        """The schema's target, or a column drawn with public randomness (the poster's random attribute)."""
        if self.schema_.target:
            return self.schema_.target
        return str(self.schema_.names[int(rng.integers(len(self.schema_.names)))])

    def _split_spans(self) -> None:
        """Which encoded spans are the label's (the DNN's output) and which are its inputs."""
        spans = self._spans()
        self.label_spans_ = [s for s, info in zip(spans, self.transformer_.output_info) if info.column == self.label_]
        self.input_spans_ = [s for s, info in zip(spans, self.transformer_.output_info) if info.column != self.label_]

    def _label_mask(self) -> torch.Tensor:
        mask = torch.zeros(int(self.transformer_.output_dim), dtype=torch.bool)
        for a, b, _ in self.label_spans_:
            mask[a:b] = True
        return mask

    def _rebased_label_spans(self) -> list[tuple[int, int, str]]:
        out, offset = [], 0
        for a, b, act in self.label_spans_:
            out.append((offset, offset + b - a, act))
            offset += b - a
        return out

    def _build_dnn(self, data_dim: int) -> None:
        width = int(self._label_mask().sum())
        hidden = self.hidden or (choose_width(data_dim, tuned=DNN_WIDTH),) * 2
        self.dnn_ = mlp(data_dim - width, hidden, width)

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        ledger = self.ledger_
        self.label_ = self._label_column(rng)
        x = self._encode(frame, rng)
        self._split_spans()
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        n_dp, spent = float(self.metadata_.n_rows), ledger.epsilon()
        phases, shares = self._fit_inputs(x, rng, gen, progress, spent)
        target = ledger.target_epsilon
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(int(rng.integers(2**62)))
            self._build_dnn(x.shape[1])
        mask, label_spans = self._label_mask(), self._rebased_label_spans()
        phase = DPPhase("dnn", ledger=ledger, n_dp=n_dp, epochs=self.epochs, batch_size=self.batch_size,
                        largest_batch=LARGEST_BATCH, min_steps=MIN_STEPS, target_epsilon=target,
                        max_grad_norm=self.max_grad_norm, accountant=self.calibration_accountant,
                        rtol=CALIBRATION_RTOL)

        def loss(model_fn, inputs, label):
            return reconstruction_loss(model_fn(inputs), label, label_spans)

        optimizer = torch.optim.Adam(self.dnn_.parameters(), lr=self.learning_rate)
        def batch(idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            rows = x[idx]  # one read of the step's sample (rows on disk are read by position)
            return rows[:, ~mask], rows[:, mask]

        phase.run(self.dnn_, optimizer, loss, batch, n_rows=len(x), generator=gen, progress=progress,
                  label=self.name)
        self.dnn_.requires_grad_(False).eval()
        self.label_quota_ = self._label_probabilities()
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=[*phases, phase],
                                      shares={**shares, "dnn": 1.0})
        self.budget_["label"] = self.label_

    def _fit_inputs(self, x, rng, gen, progress, spent) -> tuple[list, dict]:
        """Train what draws the DNN's inputs: nothing for DP-DNN (uniform draws)."""
        self.generator_ = None
        return [], {}

    def _label_probabilities(self) -> list[float] | None:
        """The DP (or public) label proportions of a categorical label, from the metadata's slot counts."""
        if len(self.label_spans_) != 1 or self.label_spans_[0][2] != "softmax":
            return None
        a, b, _ = self.label_spans_[0]
        index = next(i for i, s in enumerate(self.transformer_.output_info) if int(s.start) == a)
        counts = np.clip(np.nan_to_num(np.asarray(self.transformer_.slot_counts().get(index, np.ones(b - a)),
                                                  float)), 0.0, None)
        return (counts / counts.sum() if counts.sum() > 0 else np.full(b - a, 1.0 / (b - a))).tolist()

    # ------------------------------------------------------------------ sample
    @torch.no_grad()
    def _inputs(self, n: int, gen: torch.Generator) -> torch.Tensor:
        """Uniform encoded rows (the label's spans left at zero): numbers in [-1, 1], categories one-hot."""
        rows = torch.zeros(n, int(self.transformer_.output_dim))
        for a, b, act in self.input_spans_:
            if act == "softmax":
                rows[torch.arange(n), a + torch.randint(b - a, (n,), generator=gen)] = 1.0
            else:
                rows[:, a:b] = torch.rand(n, b - a, generator=gen) * 2 - 1
        return rows

    @torch.no_grad()
    def _labelled(self, n: int, gen: torch.Generator) -> torch.Tensor:
        rows = self._inputs(n, gen)
        mask = self._label_mask()
        out = self.dnn_(rows[:, ~mask])
        for (a, b, act), (c, d, _) in zip(self.label_spans_, self._rebased_label_spans()):
            block = out[:, c:d]
            if act == "softmax":  # the network's prediction (argmax), as the poster labels rows
                rows[:, a:b] = torch.nn.functional.one_hot(block.argmax(1), b - a).float()
            else:
                rows[:, a:b] = torch.tanh(block) if act == "tanh" else block
        return rows

    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        if not (self.keep_label_proportions and self.label_quota_ is not None):
            rows = self._labelled(n, gen)
        else:
            a, b, _ = self.label_spans_[0]
            quota = np.ceil(np.asarray(self.label_quota_) * n).astype(np.int64)
            taken = np.zeros(b - a, dtype=np.int64)
            kept, last = [], None
            for _ in range(self.max_rounds):
                if sum(len(k) for k in kept) >= n:
                    break
                last = self._labelled(max(_CANDIDATES, n), gen)
                kept.append(last[label_quota_filter(last[:, a:b].argmax(1).numpy(), quota, taken)])
            rows = torch.cat(kept + ([last] if last is not None else []))[:n] if n else self._labelled(0, gen)
        return self.transformer_.inverse_transform(rows.numpy(), rng=rng, softmax="probs")

    # ------------------------------------------------------------------ persistence
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"dnn.{k}": v for k, v in self.dnn_.state_dict().items()}
        if self.generator_ is not None:
            tensors.update({f"generator.{k}": v for k, v in self.generator_.state_dict().items()})
        state = {"transformer": self.transformer_.to_dict(), "budget": self.budget_, "label": self.label_,
                 "label_quota": self.label_quota_}
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        from dpsynth.data.transformers import TableTransformer

        self.transformer_ = TableTransformer.from_dict(state["transformer"])
        self.label_, self.label_quota_, self.budget_ = state["label"], state["label_quota"], state["budget"]
        self._split_spans()
        data_dim = int(self.transformer_.output_dim)
        self._build_dnn(data_dim)
        self.dnn_.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("dnn.")}, strict=True)
        self.dnn_.eval()
        self.generator_ = None
        if any(k.startswith("generator.") for k in tensors):
            self._build_generator(data_dim)
            self.generator_.load_state_dict({k[10:]: v for k, v in tensors.items() if k.startswith("generator.")},
                                            strict=True)
            self.generator_.eval()
        self.category_weights_ = None


@register
class DPGANDNN(DPDNN):
    """DP-GAN-DNN (module docstring): ``dp-gan``'s hyper-parameters for the GAN phase (``gan_epochs``,
    ``critic_iters``, learning rates, ``gan_max_grad_norm``, ``noise_dim``, ``generator_hidden``, ``critic_hidden``),
    ``gan_share`` of the budget after the metadata, and DP-DNN's for the DNN phase."""

    name = "dp-gan-dnn"
    phases = ("metadata", "gan", "dnn")
    fast_params: dict[str, Any] = {**DPDNN.fast_params, "gan_epochs": 1.0, "gan_batch_size": 32, "noise_dim": 16,
                                   "generator_hidden": (32,), "critic_hidden": (32,)}

    def __init__(
        self,
        *,
        hidden: tuple[int, ...] | None = None,
        epochs: float = 10.0,
        batch_size: int | None = None,
        learning_rate: float = 0.005,
        max_grad_norm: float = 1.0,
        keep_label_proportions: bool = False,
        max_rounds: int = 50,
        calibration_accountant: str = "pld",
        gan_share: float = 0.5,
        noise_dim: int = 64,
        generator_hidden: tuple[int, ...] = (128, 128),
        critic_hidden: tuple[int, ...] | None = None,
        gan_epochs: float = 24.0,
        gan_batch_size: int | None = None,
        critic_iters: int = 5,
        critic_learning_rate: float = 0.002,
        generator_learning_rate: float = 0.002,
        gan_max_grad_norm: float = 1.0,
        backend: str = "numpy",
    ):
        super().__init__(hidden=hidden, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                         max_grad_norm=max_grad_norm, keep_label_proportions=keep_label_proportions,
                         max_rounds=max_rounds, calibration_accountant=calibration_accountant, backend=backend)
        self.gan_share = gan_share
        self.noise_dim = noise_dim
        self.generator_hidden = as_layers(generator_hidden)
        self.critic_hidden = as_layers(critic_hidden)
        self.gan_epochs = gan_epochs
        self.gan_batch_size = gan_batch_size
        self.critic_iters = critic_iters
        self.critic_learning_rate = critic_learning_rate
        self.generator_learning_rate = generator_learning_rate
        self.gan_max_grad_norm = gan_max_grad_norm

    def _check_params(self) -> None:
        super()._check_params()
        if not 0.0 < self.gan_share < 1.0:
            raise InputError(f"gan_share must be in (0, 1). Found {self.gan_share}.")

    def _fit_inputs(self, x, rng, gen, progress, spent) -> tuple[list, dict]:
        """DP-GAN on the encoded rows (``dp-gan``'s phase, logistic loss) on ``gan_share`` of the remaining budget."""
        ledger, data_dim = self.ledger_, x.shape[1]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(2**62)))
            self._build_generator(data_dim)
            wide = choose_width(data_dim, tuned=DNN_WIDTH)
            critic = Critic(data_dim, self.critic_hidden or (wide, wide // 2))
        target = ledger.target_epsilon
        phase = DPPhase("gan", ledger=ledger, n_dp=float(self.metadata_.n_rows), epochs=self.gan_epochs,
                        batch_size=self.gan_batch_size, largest_batch=LARGEST_BATCH, min_steps=1000,
                        target_epsilon=target if math.isinf(target) else spent + self.gan_share * (target - spent),
                        max_grad_norm=self.gan_max_grad_norm, accountant=self.calibration_accountant,
                        rtol=CALIBRATION_RTOL)
        params = {**self.get_params(), "critic_loss": "bce", "gp_weight": 0.0, "gumbel_tau": 0.2}
        train_gan(self.generator_, nn.Identity(), critic, x, self._spans(), phase=phase, params=params,
                  generator=gen, progress=progress)
        return [phase], {"gan": self.gan_share}

    @torch.no_grad()
    def _inputs(self, n: int, gen: torch.Generator) -> torch.Tensor:
        """DP-GAN rows: numbers through tanh, each category drawn from the generator's probabilities (one-hot, as
        the DNN was trained on)."""
        rows = torch.as_tensor(self._rows(n, gen))
        for a, b, act in self._spans():
            if act == "softmax" and n:
                pick = torch.multinomial(rows[:, a:b].clamp_min(0) + 1e-12, 1, generator=gen).squeeze(1)
                rows[:, a:b] = torch.nn.functional.one_hot(pick, b - a).float()
        return rows
