"""DP-TLDM (seed 004 §5): a DP VAE with per-column output heads, then a DP denoising diffusion model on its latents.

Algorithm (seed 004 Alg. 1, with the privacy fixes of DESIGN.md §1):

1. **Encoding.** A :class:`~dpsynth.data.transformers.TableTransformer` fitted only on the public schema and the
   DP metadata (``metadata_``, already paid for); ``epsilon=inf`` may fit it on the rows (``fit_exact``).
2. **VAE phase** (``phase="vae"``): encoder and decoder trained together with DP-SGD on the negative ELBO
   (Gaussian heads for tanh spans, categorical heads for softmax spans; :class:`TabularVAE`).
3. **Diffusion phase** (``phase="diffusion"``): a DDPM noise predictor (MLP on ``[z_t, emb(t)]``) trained with
   DP-SGD on latents ``z = mu(x) + sd(x) * e`` of the private rows under the frozen DP encoder.
4. **Sampling** (post-processing): DDIM/DDPM reverse process on ``sample_steps`` strided steps -> decoder heads
   (Gaussian draw on numbers, softmax probabilities on categories) -> inverse transform drawing categories.

Privacy guarantees:
- Seed 004 trains the diffusion model non-privately on ``encoder(x)`` and calls it post-processing. It is not:
  the latents are a function of each private row. Here the diffusion phase is its own DP-SGD run, composed with
  the metadata and VAE phases in the one ledger (PLD/RDP accountant; never a sum of per-phase epsilons).
- Budget split, explicit and recorded in ``budget_``: the VAE noise is calibrated so the composed ledger reaches
  at most ``spent + vae_share * (target - spent)`` (``spent`` = metadata phase), the diffusion noise so the final
  composed epsilon is at most the target. The engine stops before the target would be exceeded.
- Clipping (``clipping``): ``"per_example"`` (default; sensitivity C) or seed 004's ``"batch"`` clipping of the
  batch-mean gradient, whose sensitivity is 2C (not C as in the seed): the noise std is 2 * C * sigma. Both use
  true Poisson sampling with ``q = batch_size / n_dp``, ``n_dp = metadata_.n_rows`` (the DP row count), which is
  also the divisor of the noisy sum and the row count written to the ledger (the exact count is never saved).
- The ledger's Gaussian-DP view (mu by the Poisson CLT and by seed 004's formula, and the separation) is stored in
  ``gdp_``: it is an approximation shown beside the guarantee, which is the ledger's (epsilon, delta).
- The model file holds the VAE decoder, the denoiser, the transformer state (public/DP) and the ledger; the
  encoder is dropped (sampling never uses it). No training rows, no losses (non-DP statistics), no pickle.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from dpsynth.data.row_store import check_row_backend
from dpsynth.data.transformers import TableTransformer
from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models.base import MARGINAL_REFERENCE_ROWS, Synthesizer
from dpsynth.models.marginal_map import CategoryWeights
from dpsynth.models.networks.diffusion import Denoiser, ddim_sample, noise_schedule
from dpsynth.models.networks.vae import TabularVAE
from dpsynth.models.phase import DPPhase, budget_summary, choose_width, json_number
from dpsynth.privacy.gdp import ledger_gdp_report
from dpsynth.privacy.ghost import rowwise

__all__ = ["DPTLDM"]

_CHUNK = 65_536
#: sizing rule of both DP phases (dpsynth.models.phase): batches up to 8192 rows, at least 64 steps per phase
LARGEST_BATCH = 8192
MIN_STEPS = 64
#: the VAE width tuned on Adult: the most the width rule gives (dpsynth.models.phase.choose_width)
VAE_WIDTH = 128


@register
class DPTLDM(Synthesizer):
    """DP tabular latent diffusion model. All arguments are keyword-only hyper-parameters.

    Args:
        numeric / categorical: encodings of the :class:`TableTransformer`.
        latent_dim, vae_hidden, vae_layers, beta: VAE size and KL weight; ``vae_hidden=None`` (default) follows
            the encoded width (:func:`dpsynth.models.phase.choose_width`, at most 128: 128 on Adult).
        denoiser_hidden, denoiser_layers: size of the noise-prediction MLP.
        vae_batch_size, vae_epochs, diffusion_batch_size, diffusion_epochs: expected Poisson batch sizes and
            epochs of the DP phases (q = B / n_dp, steps = ceil(epochs / q); above 250,000 DP rows an epoch is
            250,000 rows' worth of steps: :data:`dpsynth.models.phase.WORK_ROWS`). A batch size of ``None`` (default)
            follows the table: the largest batch up to 8192 rows with which the phase still takes at least 64
            steps (:func:`dpsynth.models.phase.choose_batch_size`; 8192 on Adult, 142 on a 455-row table).
        vae_share: fraction of the budget left after metadata that the VAE phase may bring the ledger to.
        max_grad_norm, clipping: C and the clipping mode (``"per_example"`` or ``"batch"``; see module doc).
        learning_rate: Adam step size of both DP phases (DP-SGD wants a large one: few, very noisy steps).
        diffusion_steps, schedule: T and the noise schedule (``"cosine"`` or ``"linear"``).
        sample_steps, sample_eta: reverse steps used at sampling (strided) and DDIM eta (1 = DDPM-like).
        latent_sampler: ``"diffusion"`` (TLDM) or ``"prior"`` (plain DP-VAE: z ~ N(0, I); skips the diffusion
            phase and gives its budget to the VAE) — an ablation.
        nonprivate_epochs, nonprivate_batch_size, nonprivate_learning_rate: each phase in non-private mode.
        match_marginals: map sampled numeric columns, rank-preserving, onto the DP metadata histograms, and
            reweight category probabilities to the DP category counts (:mod:`dpsynth.models.marginal_map`;
            post-processing, no ledger event).
        backend: ``"numpy"`` fits a pandas frame in memory; ``"duckdb"`` / ``"spark"`` take a Parquet / CSV path (or
            a Spark DataFrame): the metadata phase runs in the engine, the rows are encoded onto disk in chunks and
            each DP-SGD step reads its Poisson sample by position (:mod:`dpsynth.data.row_store`); the diffusion
            phase encodes each batch's latents under the frozen encoder. Same plan and ledger as from a frame.
    """

    name = "dp-tldm"
    reads_tables = True  # fit(path, backend="duckdb"): rows encoded onto disk, read by Poisson batch
    phases = ("metadata", "vae", "diffusion")
    zero_allowed = ("sample_eta",)  # 0 is meaningful (see check_params)
    #: the metadata phase's default share: sampled marginals are mapped onto its DP histograms, and 0.3 beat 0.1 on
    #: both AUC/R2 and 2-way TVD on 7 tables of 325-26,049 rows (README, "Budget splits")
    default_metadata_share = 0.3
    fast_params = {"latent_dim": 4, "vae_hidden": 32, "vae_layers": 1, "denoiser_hidden": 32, "denoiser_layers": 1,
                   "vae_batch_size": 200, "vae_epochs": 2, "diffusion_batch_size": 200, "diffusion_epochs": 2,
                   "diffusion_steps": 50, "sample_steps": 5, "nonprivate_epochs": 2}

    def __init__(
        self,
        *,
        numeric: str = "quantile",
        categorical: str = "onehot",
        latent_dim: int = 16,
        vae_hidden: int | None = None,
        vae_layers: int = 2,
        beta: float = 1.0,
        denoiser_hidden: int = 128,
        denoiser_layers: int = 2,
        vae_batch_size: int | None = None,
        vae_epochs: float = 20.0,
        diffusion_batch_size: int | None = None,
        diffusion_epochs: float = 20.0,
        vae_share: float = 0.6,
        max_grad_norm: float = 1.0,
        clipping: str = "per_example",
        learning_rate: float = 2e-2,
        diffusion_steps: int = 1000,
        schedule: str = "cosine",
        sample_steps: int = 10,
        sample_eta: float = 1.0,
        latent_sampler: str = "diffusion",
        nonprivate_epochs: int = 60,
        nonprivate_batch_size: int = 512,
        nonprivate_learning_rate: float = 2e-3,
        match_marginals: bool = True,
        backend: str = "numpy",
    ):
        self.numeric = numeric
        self.categorical = categorical
        self.latent_dim = latent_dim
        self.vae_hidden = vae_hidden
        self.vae_layers = vae_layers
        self.beta = beta
        self.denoiser_hidden = denoiser_hidden
        self.denoiser_layers = denoiser_layers
        self.vae_batch_size = vae_batch_size
        self.vae_epochs = vae_epochs
        self.diffusion_batch_size = diffusion_batch_size
        self.diffusion_epochs = diffusion_epochs
        self.vae_share = vae_share
        self.max_grad_norm = max_grad_norm
        self.clipping = clipping
        self.learning_rate = learning_rate
        self.diffusion_steps = diffusion_steps
        self.schedule = schedule
        self.sample_steps = sample_steps
        self.sample_eta = sample_eta
        self.latent_sampler = latent_sampler
        self.nonprivate_epochs = nonprivate_epochs
        self.nonprivate_batch_size = nonprivate_batch_size
        self.nonprivate_learning_rate = nonprivate_learning_rate
        self.match_marginals = match_marginals
        self.backend = backend

    # ------------------------------------------------------------------ networks
    def _check_params(self) -> None:
        if self.clipping not in ("per_example", "batch"):
            raise InputError(f"clipping must be 'per_example' or 'batch' (seed 004). Found {self.clipping!r}.")
        if self.latent_sampler not in ("diffusion", "prior"):
            raise InputError(f"latent_sampler must be 'diffusion' or 'prior'. Found {self.latent_sampler!r}.")
        if not (0.0 < self.vae_share < 1.0) and self.latent_sampler == "diffusion":
            raise InputError(f"vae_share must be in (0, 1). Found {self.vae_share}.")
        if self.schedule not in ("cosine", "linear"):
            raise InputError(f"schedule must be 'cosine' or 'linear'. Found {self.schedule!r}.")
        check_row_backend(self)

    def _build(self, spans: list[tuple[int, int, str]]) -> None:
        hidden = self.vae_hidden or choose_width(max(end for _, end, _ in spans), tuned=VAE_WIDTH)
        self.vae_ = TabularVAE(spans, latent_dim=self.latent_dim, hidden=(hidden,) * self.vae_layers,
                               beta=self.beta)
        self.denoiser_ = Denoiser(self.latent_dim, hidden=(self.denoiser_hidden,) * self.denoiser_layers)
        self.alpha_bar_ = noise_schedule(self.diffusion_steps, self.schedule)

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        self._check_params()
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        init_seed = int(rng.integers(2**62))
        self.transformer_ = TableTransformer(self.schema_, numeric=self.numeric, categorical=self.categorical)
        if self.ledger_.non_private:
            self.transformer_.fit_exact(frame, non_private=True, rng=rng)
        else:
            self.transformer_.fit(self.metadata_, rng=rng)
        x = torch.from_numpy(self.transformer_.transform(frame, rng=rng))
        self._train(x, gen=gen, init_seed=init_seed, progress=progress)

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit from a file (or a Spark DataFrame): the rows are encoded onto disk once, the encoding fitted on the
        metadata (DP; exact counts in the non-private mode), and every DP-SGD step reads its Poisson sample by
        position (:mod:`dpsynth.data.row_store`): memory does not grow with the rows."""
        from dpsynth.data.row_store import rows_on_disk

        self._check_params()
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        init_seed = int(rng.integers(2**62))
        self.transformer_ = TableTransformer(self.schema_, numeric=self.numeric, categorical=self.categorical)
        self.transformer_.fit(self.metadata_, rng=rng)
        with rows_on_disk(table, self.schema_, self.transformer_, rng=rng, exact=self.ledger_.non_private) as rows:
            self._train(rows, gen=gen, init_seed=init_seed, progress=progress)

    def _train(self, x, *, gen: torch.Generator, init_seed: int, progress: bool) -> None:
        """The VAE and diffusion phases on the encoded rows ``x`` (a tensor, or rows on disk: read only as
        ``x[positions]`` and ``len(x)``)."""
        ledger = self.ledger_
        spans = [(s.start, s.end, s.activation) for s in self.transformer_.output_info]
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(init_seed)
            self._build(spans)
        n_rows, n_dp = len(x), float(self.metadata_.n_rows)
        spent = ledger.epsilon()
        target = ledger.target_epsilon
        diffusion = self.latent_sampler == "diffusion"
        vae_target = target if ledger.non_private or not diffusion else spent + self.vae_share * (target - spent)
        private = not ledger.non_private
        lr = self.learning_rate if private else self.nonprivate_learning_rate

        def phase(name: str, batch_size: int | None, epochs: float, phase_target: float) -> DPPhase:
            return DPPhase(name, ledger=ledger, n_dp=n_dp, target_epsilon=phase_target,
                           epochs=epochs if private else self.nonprivate_epochs,
                           batch_size=batch_size if private else self.nonprivate_batch_size,
                           largest_batch=LARGEST_BATCH, min_steps=MIN_STEPS, max_grad_norm=self.max_grad_norm,
                           clipping=self.clipping)

        d = self.latent_dim

        def vae_batch(idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return x[idx], torch.randn((len(idx), d), generator=gen)

        vae_phase = phase("vae", self.vae_batch_size, self.vae_epochs, vae_target)
        phases = [vae_phase]
        vae_phase.run(self.vae_, torch.optim.Adam(self.vae_.parameters(), lr=lr), _vae_loss, vae_batch,
                      n_rows=n_rows, generator=gen, progress=progress, label="dp-tldm")

        if diffusion:
            ab = self.alpha_bar_.float()
            steps_t = self.diffusion_steps

            def diff_batch(idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
                # latents of the sampled private rows under the frozen DP encoder, computed per batch (not for every
                # row up front: the rows may be on disk), read only by this DP-SGD phase
                m = len(idx)
                with torch.no_grad():
                    mu, logvar = self.vae_.encode(x[idx])
                z0 = mu + torch.exp(0.5 * logvar) * torch.randn((m, d), generator=gen)
                t = torch.randint(1, steps_t + 1, (m,), generator=gen)
                return z0, t.float() / steps_t, ab[t], torch.randn((m, d), generator=gen)

            diff_phase = phase("diffusion", self.diffusion_batch_size, self.diffusion_epochs, target)
            diff_phase.run(self.denoiser_, torch.optim.Adam(self.denoiser_.parameters(), lr=lr), _diffusion_loss,
                           diff_batch, n_rows=n_rows, generator=gen, progress=progress, label="dp-tldm")
            phases.append(diff_phase)
        x = None  # the encoded private rows are not needed past training (closures above hold the cell)
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=phases,
                                      shares={"vae": self.vae_share if diffusion else 1.0, "diffusion": 1.0})
        self.gdp_ = _gdp(ledger)
        self.category_weights_ = None
        if self.match_marginals:  # post-processing: decoded rows of the DP model + DP slot counts
            reference = self._encoded_rows(MARGINAL_REFERENCE_ROWS, gen)
            self.category_weights_ = CategoryWeights.fit(reference, self.transformer_, mode="probs",
                                                         sigma=self.metadata_.sigmas())

    # ------------------------------------------------------------------ sample
    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        if n == 0:
            return self.transformer_.inverse_transform(np.zeros((0, self.transformer_.output_dim)))
        arr = self._encoded_rows(n, gen)
        if self.category_weights_ is not None:
            arr = self.category_weights_.apply(arr)
        return self.transformer_.inverse_transform(arr, rng=rng, softmax="probs")

    def _encoded_rows(self, n: int, gen: torch.Generator) -> np.ndarray:
        """Decoder output for n latents from the reverse diffusion (or the prior): numbers, slot probabilities."""
        parts = []
        with torch.no_grad():
            for start in range(0, n, _CHUNK):
                m = min(_CHUNK, n - start)
                if self.latent_sampler == "diffusion":
                    z = ddim_sample(self.denoiser_, m, alpha_bar=self.alpha_bar_, steps=self.sample_steps,
                                    eta=self.sample_eta, generator=gen)
                else:
                    z = torch.randn((m, self.latent_dim), generator=gen)
                parts.append(self.vae_.generate(z, generator=gen).numpy())
        return np.concatenate(parts)

    # ------------------------------------------------------------------ state
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"decoder.{k}": v for k, v in self.vae_.state_dict().items()
                   if not k.startswith(("encoder.", "to_"))}
        if self.latent_sampler == "diffusion":
            tensors.update({f"denoiser.{k}": v for k, v in self.denoiser_.state_dict().items()})
        state = {"transformer": self.transformer_.to_dict(), "budget": self.budget_, "gdp": self.gdp_,
                 "category_weights": None if self.category_weights_ is None else self.category_weights_.to_dict()}
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        self.transformer_ = TableTransformer.from_dict(state["transformer"])
        self._build([(s.start, s.end, s.activation) for s in self.transformer_.output_info])
        vae_state = {k[len("decoder."):]: v for k, v in tensors.items() if k.startswith("decoder.")}
        missing = self.vae_.load_state_dict(vae_state, strict=False).missing_keys
        if any(not k.startswith(("encoder.", "to_")) for k in missing):
            raise InputError(f"model file lacks decoder weights: {missing}.")
        if self.latent_sampler == "diffusion":
            self.denoiser_.load_state_dict({k[len("denoiser."):]: v for k, v in tensors.items()
                                            if k.startswith("denoiser.")})
        self.vae_.eval()
        self.denoiser_.eval()
        self.budget_, self.gdp_ = state["budget"], state["gdp"]
        weights = state.get("category_weights")
        self.category_weights_ = None if weights is None else CategoryWeights.from_dict(weights)


# ---------------------------------------------------------------------- per-row losses (vmapped by the engine, or
# called once on the batch by ghost clipping: they are row-wise, and the engine checks that)
@rowwise
def _vae_loss(model_fn, x: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    return model_fn(x, noise)


@rowwise
def _diffusion_loss(model_fn, z0: torch.Tensor, t: torch.Tensor, ab_t: torch.Tensor, eps: torch.Tensor):
    a = ab_t.unsqueeze(-1)
    zt = a.sqrt() * z0 + (1 - a).sqrt() * eps
    return ((model_fn(zt, t) - eps) ** 2).sum(-1)


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (json_number(v) if isinstance(v, float) else v) for k, v in d.items()}


def _gdp(ledger) -> dict[str, Any]:
    if ledger.non_private:
        return {"note": "non-private mode: no Gaussian-DP guarantee"}
    return _jsonable(ledger_gdp_report(ledger))

