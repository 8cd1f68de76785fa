"""DP-SYN (Abay et al. 2018; the baseline of seed 003): per-label DP autoencoders, then DP expectation-maximisation
(Park et al. 2017) of a Gaussian mixture in each label's latent space.

Algorithm:

1. **Metadata** (``phase="metadata"``): public schema or DP discovery, DP row count and DP histograms (the label's
   DP counts are what sampling draws labels from).
2. **Autoencoders** (``phase="autoencoder"``): the rows are split by their label (the schema's categorical target;
   one group when there is none) and each group gets its own encoder and decoder. They are trained together as one
   *routed* module - a row goes through its own label's autoencoder only - by DP-SGD: per-example clipping of the
   whole module's gradient (non-zero only in the row's own autoencoder), Gaussian noise on every parameter, Poisson
   sampling at q = B / n_dp. This is DP-SYN's parallel training of one DP autoencoder per label as a single
   mechanism: one row changes one clipped unit, so the step is one ``PoissonSampledDpEvent`` whatever the number
   of labels.
3. **DP-EM** (``phase="em"``): each row's latent code ``z = enc_label(x) / sqrt(latent_dim)`` lies in the unit
   ball (tanh box, rescaled). Each of ``em_iterations`` rounds computes, for every label and every one of
   ``components`` diagonal Gaussians, the sufficient statistics ``sum r``, ``sum r z``, ``sum r z*z`` (``r``: the
   row's responsibilities under the current mixture, summing to 1) and releases them all with Gaussian noise
   (:func:`release_statistics`); the M-step is post-processing of the noisy sums. Sensitivity under add/remove: a row
   touches its own label's statistics only, by at most ``||r|| <= 1``, ``sqrt(sum r_m^2 ||z||^2) <= 1`` and
   ``sqrt(sum r_m^2 ||z*z||^2) <= 1``: L2 sensitivity sqrt 3 for the whole release, one ``GaussianDpEvent`` per
   round. The mixture starts data-independent (means drawn in the ball from public randomness).

Where published DP-SYN does not hold: it converts each part to (epsilon, delta) and adds them (seed 003 Lemma 4:
composing the RDP / PLD curves is tighter; here the ledger composes every event), treats the label as public (here
the label counts are DP, from the metadata phase), and reads min/max and categories off the rows (here the encoding
is fitted on the public schema or the DP metadata). Noise is calibrated so the composed epsilon stays at most the
target: the autoencoders against ``spent + autoencoder_share * (target - spent)``, DP-EM against the rest.

Sampling (post-processing): a label from the DP label counts, a component from that label's mixture weights, a
latent code from the component, decoded by the label's decoder; the label column is set to the drawn label. The
model file holds the decoders, the mixtures, the label probabilities and the transformer state.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from dpsynth.data.row_store import check_row_backend
from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._conditional_gan import target_span
from dpsynth.models.base import Synthesizer
from dpsynth.models.networks.autoencoder import Decoder, Encoder, reconstruction_loss
from dpsynth.models.phase import DPPhase, budget_summary, choose_width, json_number
from dpsynth.privacy.mechanisms import calibrate_gaussian_queries
from dpsynth.privacy.secure_noise import noise_mode, secure_normal

__all__ = ["DPSYN", "RoutedAutoencoder", "em_statistics", "release_statistics"]

LARGEST_BATCH = 512
MIN_AUTOENCODER_STEPS = 200
CALIBRATION_RTOL = 0.01
AUTOENCODER_WIDTH = 64
#: L2 sensitivity of one DP-EM round (counts, first and second moments, each at most 1; module docstring)
EM_SENSITIVITY = math.sqrt(3.0)
#: floors of the M-step (post-processing of noisy sums): a component's weight count and a coordinate's variance
MIN_COUNT, MIN_VARIANCE = 1.0, 1e-4
_SAMPLE_CHUNK = 131_072
#: rows per chunk when DP-EM passes over the rows (their latents are computed a chunk at a time)
_CODE_CHUNK_ROWS = 65_536


class RoutedAutoencoder(nn.Module):
    """``K`` autoencoders; ``forward(row, onehot)`` reconstructs a row (or batch) through the autoencoder its
    one-hot label picks (the others get zero weight, so their per-example gradients are zero)."""

    def __init__(self, k: int, data_dim: int, hidden: tuple[int, ...], latent_dim: int):
        super().__init__()
        self.encoders = nn.ModuleList(Encoder(data_dim, hidden, latent_dim) for _ in range(int(k)))
        self.decoders = nn.ModuleList(Decoder(latent_dim, hidden, data_dim) for _ in range(int(k)))

    def forward(self, row: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        out = 0.0
        for j, (enc, dec) in enumerate(zip(self.encoders, self.decoders)):
            out = out + onehot[..., j:j + 1] * dec(enc(row))
        return out


def em_statistics(z: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, means: torch.Tensor,
                  variances: torch.Tensor) -> torch.Tensor:
    """One E-step's sufficient statistics, exact: for latents ``z`` (n, d) in the unit ball with ``labels`` (n,),
    and per label mixtures ``weights`` (K, M), ``means`` / ``variances`` (K, M, d), the array (K, M, 1 + 2d) of
    ``[sum r, sum r z, sum r z*z]`` per label and component. One row adds its responsibilities ``r`` (summing to 1)
    to its own label only."""
    k, m, d = means.shape
    out = torch.zeros(k, m, 1 + 2 * d, dtype=z.dtype)
    for j in range(k):
        zj = z[labels == j]
        if not len(zj):
            continue
        log_p = (torch.log(weights[j].clamp_min(1e-12))[None, :]
                 - 0.5 * (((zj[:, None, :] - means[j][None]) ** 2) / variances[j][None]
                          + torch.log(2 * math.pi * variances[j][None])).sum(-1))
        r = torch.softmax(log_p, dim=1)  # (n_j, M)
        out[j, :, 0] = r.sum(0)
        out[j, :, 1:1 + d] = r.T @ zj
        out[j, :, 1 + d:] = r.T @ (zj * zj)
    return out


def release_statistics(stats: torch.Tensor, *, sigma: float, ledger, generator: torch.Generator) -> torch.Tensor:
    """One DP-EM round's release: ``stats`` (L2 sensitivity sqrt 3 under add/remove, :func:`em_statistics`) plus
    i.i.d. N(0, (sigma sqrt 3)^2) noise, recorded in ``ledger`` (phase ``"em"``) as ``GaussianDpEvent(sigma)``
    before the noise is drawn (exact, with a ``NonPrivateDpEvent``, in the non-private mode)."""
    from dp_accounting import dp_event

    if ledger.non_private:
        ledger.spend(dp_event.NonPrivateDpEvent(), phase="em", mechanism="dp-em sufficient statistics")
        return stats
    scale = float(sigma) * EM_SENSITIVITY
    ledger.spend(dp_event.GaussianDpEvent(float(sigma)), phase="em", mechanism="dp-em sufficient statistics",
                 noise_scale=scale)
    if noise_mode() == "secure":  # the cryptographic generator's normals (dpsynth.privacy.secure_noise)
        return stats + torch.from_numpy(secure_normal(tuple(stats.shape), scale)).to(stats.dtype)
    return stats + scale * torch.randn(stats.shape, generator=generator, dtype=stats.dtype)


@register
class DPSYN(Synthesizer):
    """DP-SYN with honest accounting (module docstring). Hyper-parameters: ``numeric`` (encoding of numbers),
    ``latent_dim``, ``autoencoder_hidden`` (``None``: by the width rule, at most 64), ``autoencoder_epochs`` /
    ``autoencoder_batch_size`` (``None``: up to 512 rows, at least 200 steps) / ``autoencoder_learning_rate`` /
    ``autoencoder_max_grad_norm`` / ``autoencoder_share`` (of the budget after the metadata), ``components`` (Gaussians
    per label), ``em_iterations`` (noisy EM rounds), ``categorical_sampling`` (``"argmax"`` or ``"sample"``: how
    decoded category logits become categories), ``calibration_accountant``, ``backend`` (``"numpy"``: a pandas frame
    in memory; ``"duckdb"`` / ``"spark"``: a Parquet / CSV path or a Spark DataFrame, its rows encoded onto disk;
    :mod:`dpsynth.data.row_store`)."""

    name = "dp-syn"
    reads_tables = True  # fit(path, backend="duckdb"): rows encoded onto disk, read by batch and by chunk
    phases = ("metadata", "autoencoder", "em")
    fast_params = {"autoencoder_epochs": 1.0, "autoencoder_batch_size": 32, "autoencoder_hidden": (16,),
                   "latent_dim": 4, "components": 2, "em_iterations": 3, "calibration_accountant": "rdp"}

    def __init__(
        self,
        *,
        numeric: str = "minmax",
        latent_dim: int = 8,
        autoencoder_hidden: tuple[int, ...] | None = None,
        autoencoder_epochs: float = 16.0,
        autoencoder_batch_size: int | None = None,
        autoencoder_learning_rate: float = 0.005,
        autoencoder_max_grad_norm: float = 1.0,
        autoencoder_share: float = 0.7,
        components: int = 5,
        em_iterations: int = 10,
        categorical_sampling: str = "argmax",
        calibration_accountant: str = "pld",
        backend: str = "numpy",
    ):
        self.numeric = numeric
        self.latent_dim = latent_dim
        self.autoencoder_hidden = tuple(autoencoder_hidden) if isinstance(autoencoder_hidden, (list, tuple)) \
            else autoencoder_hidden
        self.autoencoder_epochs = autoencoder_epochs
        self.autoencoder_batch_size = autoencoder_batch_size
        self.autoencoder_learning_rate = autoencoder_learning_rate
        self.autoencoder_max_grad_norm = autoencoder_max_grad_norm
        self.autoencoder_share = autoencoder_share
        self.components = components
        self.em_iterations = em_iterations
        self.categorical_sampling = categorical_sampling
        self.calibration_accountant = calibration_accountant
        self.backend = backend

    def _check_params(self) -> None:
        from dpsynth.data.transformers.numeric import NUMERIC_METHODS

        if self.numeric not in NUMERIC_METHODS:
            raise InputError(f"numeric must be one of {', '.join(NUMERIC_METHODS)}. Found {self.numeric!r}.")
        if not 0.0 < self.autoencoder_share < 1.0:
            raise InputError(f"autoencoder_share must be in (0, 1). Found {self.autoencoder_share}.")
        if self.categorical_sampling not in ("argmax", "sample"):
            raise InputError(f"categorical_sampling must be 'argmax' or 'sample'. Found {self.categorical_sampling!r}.")
        if self.calibration_accountant not in ("pld", "rdp"):
            raise InputError(f"calibration_accountant must be 'pld' or 'rdp'. Found {self.calibration_accountant!r}.")
        check_row_backend(self)

    def _hidden(self, data_dim: int) -> tuple[int, ...]:
        return self.autoencoder_hidden or (choose_width(data_dim, tuned=AUTOENCODER_WIDTH),)

    def _spans(self) -> list[tuple[int, int, str]]:
        return [(int(s.start), int(s.end), str(s.activation)) for s in self.transformer_.output_info]

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        from dpsynth.data.transformers import TableTransformer

        t0 = time.perf_counter()
        ledger = self.ledger_
        self.transformer_ = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot")
        if ledger.non_private:
            self.transformer_.fit_exact(frame, non_private=True, rng=rng)
        else:
            self.transformer_.fit(self.metadata_, rng=rng)
        x = torch.as_tensor(np.ascontiguousarray(self.transformer_.transform(frame, rng=rng)), dtype=torch.float32)
        self._train(x, rng=rng, progress=progress, t0=t0)

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit from a file (or a Spark DataFrame): the rows encoded onto disk once (the encoding fitted on the
        metadata: DP, exact counts in the non-private mode); each DP-SGD step reads its Poisson sample by position
        and each DP-EM round passes over the rows a chunk at a time (:mod:`dpsynth.data.row_store`)."""
        from dpsynth.data.row_store import rows_on_disk
        from dpsynth.data.transformers import TableTransformer

        t0 = time.perf_counter()
        self.transformer_ = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot")
        self.transformer_.fit(self.metadata_, rng=rng)
        with rows_on_disk(table, self.schema_, self.transformer_, rng=rng, exact=self.ledger_.non_private) as rows:
            self._train(rows, rng=rng, progress=progress, t0=t0)

    def _train(self, x, *, rng: np.random.Generator, progress: bool, t0: float) -> None:
        """The autoencoder and DP-EM phases on the encoded rows ``x`` (a tensor, or rows on disk: read only as
        ``x[positions]``, ``x[a:b]`` and ``len(x)``). A row's label is read off its own encoded target slots."""
        ledger = self.ledger_
        span = target_span(self.transformer_, self.schema_.target)
        self.label_span_ = None if span is None else (int(span.start), int(span.end))
        k = 1 if span is None else span.width

        def labels_of(rows: torch.Tensor) -> torch.Tensor:
            return torch.zeros(len(rows), dtype=torch.long) if span is None else rows[:, span.start:span.end].argmax(1)

        self.label_probs_ = self._label_probabilities(k)
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        data_dim, spans = int(self.transformer_.output_dim), self._spans()
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(seed + 1)
            autoencoders = RoutedAutoencoder(k, data_dim, self._hidden(data_dim), self.latent_dim)
        n_dp, spent, target = float(self.metadata_.n_rows), ledger.epsilon(), ledger.target_epsilon
        phase = DPPhase("autoencoder", epochs=self.autoencoder_epochs, batch_size=self.autoencoder_batch_size,
                        min_steps=MIN_AUTOENCODER_STEPS, max_grad_norm=self.autoencoder_max_grad_norm,
                        target_epsilon=target if ledger.non_private
                        else spent + self.autoencoder_share * (target - spent),
                        ledger=ledger, n_dp=n_dp, largest_batch=LARGEST_BATCH, accountant=self.calibration_accountant,
                        rtol=CALIBRATION_RTOL)

        def loss(model_fn, row, label):
            return reconstruction_loss(model_fn(row, label), row, spans)

        optimizer = torch.optim.Adam(autoencoders.parameters(), lr=self.autoencoder_learning_rate)

        def batch(idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            rows = x[idx]  # one read of the step's sample
            return rows, torch.nn.functional.one_hot(labels_of(rows), k).float()

        phase.run(autoencoders, optimizer, loss, batch, n_rows=len(x), generator=gen, progress=progress,
                  label=self.name)
        autoencoders.requires_grad_(False).eval()

        def codes():
            """(latents, labels) of every row, a chunk at a time: each row through its own label's encoder, into
            the unit ball (a pass over the rows per DP-EM round: nothing of the size of the table is kept)."""
            for start in range(0, len(x), _CODE_CHUNK_ROWS):
                rows = x[start:start + _CODE_CHUNK_ROWS]
                labels = labels_of(rows)
                z = torch.zeros(len(rows), self.latent_dim)
                with torch.no_grad():
                    for j, enc in enumerate(autoencoders.encoders):
                        z[labels == j] = enc(rows[labels == j]) / math.sqrt(self.latent_dim)
                yield z, labels

        em_settings = self._dp_em(codes, k, gen)
        self.decoders_ = autoencoders.decoders
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=[phase, ("em", em_settings)],
                                      shares={"autoencoder": self.autoencoder_share, "em": 1.0})
        self.fit_seconds_ = time.perf_counter() - t0  # depends on the exact row count: in memory only, never saved

    def _label_probabilities(self, k: int) -> np.ndarray:
        """The labels' sampling law: the DP (or public) counts of the target's slots; uniform when unknown."""
        if self.label_span_ is None:
            return np.ones(1)
        index = next(i for i, s in enumerate(self.transformer_.output_info) if int(s.start) == self.label_span_[0])
        counts = np.clip(np.nan_to_num(np.asarray(self.transformer_.slot_counts().get(index, np.ones(k)), float)),
                         0.0, None)
        return counts / counts.sum() if counts.sum() > 0 else np.full(k, 1.0 / k)

    def _dp_em(self, codes, k: int, gen: torch.Generator) -> dict[str, Any]:
        """DP-EM (module docstring): ``em_iterations`` rounds, each one Gaussian release of every label's
        statistics (L2 sensitivity sqrt 3; summed over ``codes()``'s chunks of (latents, labels), as they add up
        row by row) charged before its noise is drawn; the M-step is post-processing."""
        ledger, m, d = self.ledger_, int(self.components), int(self.latent_dim)
        sigma = calibrate_gaussian_queries(ledger, self.em_iterations)  # noise multiplier of sensitivity 1
        scale = sigma * EM_SENSITIVITY
        weights = torch.full((k, m), 1.0 / m)
        # data-independent start: means uniform in the ball's inner cube, broad variances
        means = (torch.rand(k, m, d, generator=gen) * 2 - 1) / math.sqrt(d)
        variances = torch.full((k, m, d), 1.0 / d)
        for _ in range(self.em_iterations):
            exact = sum((em_statistics(z, labels, weights, means, variances) for z, labels in codes()),
                        torch.zeros(k, m, 1 + 2 * d))
            stats = release_statistics(exact, sigma=sigma, ledger=ledger, generator=gen)
            count = stats[..., 0].clamp_min(MIN_COUNT)
            means = (stats[..., 1:1 + d] / count[..., None]).clamp(-1.0, 1.0)
            variances = (stats[..., 1 + d:] / count[..., None] - means**2).clamp(MIN_VARIANCE, 1.0)
            weights = count / count.sum(dim=1, keepdim=True)
        self.mixture_ = {"weights": weights, "means": means, "variances": variances}
        return {"mechanism": "gaussian sufficient statistics", "iterations": self.em_iterations,
                "components": m, "labels": k, "noise_std": float(scale), "sensitivity": EM_SENSITIVITY,
                "epsilon_after": json_number(ledger.epsilon())}

    # ------------------------------------------------------------------ sample
    @torch.no_grad()
    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        softmax = "argmax" if self.categorical_sampling == "argmax" else "logits"
        tanh = [(a, b) for a, b, act in self._spans() if act == "tanh"]
        parts = []
        for start in range(0, max(n, 1), _SAMPLE_CHUNK):
            size = min(_SAMPLE_CHUNK, n - start)
            labels = torch.multinomial(torch.as_tensor(self.label_probs_, dtype=torch.float32), size,
                                       replacement=True, generator=gen) if size else torch.zeros(0, dtype=torch.long)
            rows = torch.zeros(size, self.transformer_.output_dim)
            for j, dec in enumerate(self.decoders_):
                chosen = labels == j
                m = int(chosen.sum())
                if not m:
                    continue
                comp = torch.multinomial(self.mixture_["weights"][j], m, replacement=True, generator=gen)
                z = self.mixture_["means"][j][comp] + self.mixture_["variances"][j][comp].sqrt() * \
                    torch.randn(m, self.latent_dim, generator=gen)
                rows[chosen] = dec((z * math.sqrt(self.latent_dim)).clamp(-1.0, 1.0))
            for a, b in tanh:
                rows[:, a:b] = torch.tanh(rows[:, a:b])
            if self.label_span_ is not None:  # the label column is the drawn label
                a, b = self.label_span_
                rows[:, a:b] = torch.nn.functional.one_hot(labels, b - a).float() * 1e4
            parts.append(self.transformer_.inverse_transform(rows.numpy(), rng=rng, softmax=softmax))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    # ------------------------------------------------------------------ persistence
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"decoders.{k}": v for k, v in self.decoders_.state_dict().items()}
        tensors.update({f"mixture.{k}": v.contiguous() for k, v in self.mixture_.items()})
        state = {"transformer": self.transformer_.to_dict(), "budget": self.budget_,
                 "label_span": self.label_span_, "label_probs": [float(p) for p in self.label_probs_]}
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        from dpsynth.data.transformers import TableTransformer

        self.transformer_ = TableTransformer.from_dict(state["transformer"])
        self.label_span_ = None if state["label_span"] is None else tuple(state["label_span"])
        self.label_probs_ = np.asarray(state["label_probs"], dtype=float)
        data_dim = int(self.transformer_.output_dim)
        hidden = self._hidden(data_dim)
        self.decoders_ = nn.ModuleList(Decoder(self.latent_dim, hidden, data_dim) for _ in self.label_probs_)
        self.decoders_.load_state_dict({k[len("decoders."):]: v for k, v in tensors.items()
                                        if k.startswith("decoders.")}, strict=True)
        self.decoders_.eval()
        self.mixture_ = {k: tensors[f"mixture.{k}"] for k in ("weights", "means", "variances")}
        self.budget_ = state["budget"]
