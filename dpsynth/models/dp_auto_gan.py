"""DP-auto-GAN (seed 003): a DP autoencoder, then a WGAN in its latent space with a DP-SGD critic.

Algorithm (seed 003 Alg. 2-5, with the privacy fixes of DESIGN.md §1):

1. **Autoencoder phase** (``phase="autoencoder"``): encoder and decoder are trained *together* with DP-SGD
   (per-example clipping of the joint gradient, Gaussian noise on all of it, Poisson sampling at
   ``q = autoencoder_batch_size / n_dp``), on a per-span reconstruction loss (cross-entropy for categories, squared
   error for scaled numbers). The seed's public code updates the encoder with plain, unclipped, noiseless
   gradients while the decoder is DP; that leaks (the encoder weights are released into the decoder's
   inputs during phase 2 and are a non-DP function of the rows). With ``encoder="frozen"`` the encoder stays
   at its random (data-independent) initialisation and only the decoder is trained with DP-SGD: a valid but
   weaker alternative, kept for comparison. Default ``"dp"``: for the same budget it reconstructs much better
   (Adult, epsilon = 1, seed 0: XGBoost AUC 0.871 with the DP encoder vs 0.819 with the frozen one).
2. **GAN phase** (``phase="gan"``): the decoder is frozen. A generator maps noise to latent codes; the
   decoder (plus Gumbel-softmax on categorical spans) maps them to encoded rows; a critic scores rows. The
   critic is trained with DP-SGD: its real-data term (and, for ``critic_loss="wgan-gp"``, the gradient
   penalty on the interpolate between that real row and a generated row) is clipped per example; the
   generated-data term does not depend on private rows and is added unclipped (``public_loss``). The
   generator's update only uses the critic's gradient on generated rows, so it is post-processing of the
   DP critic (and of the DP decoder). The seed's GAN is a WGAN; the default critic here is the standard
   (non-saturating, logistic) GAN loss, ``critic_loss="bce"``, because at epsilon = 1 on Adult it trains more
   stably under DP noise than a Wasserstein critic (figures in benchmarks/adult_quality.py); ``"wgan"`` (weight
   clipping) and ``"wgan-gp"`` (penalty clipped per example with its record) are there for the paper's setup.

Privacy guarantees:
- Every access to private rows is a DP-SGD step recorded in ``ledger_`` (phases ``"autoencoder"`` and
  ``"gan"``), composed with the metadata phase by the ledger's PLD/RDP accountant (seed 003 Lemma 4: RDP /
  PLD composition, never adding per-phase epsilons). Noise is calibrated so that the *final* composed
  epsilon is at most the target: the autoencoder against an intermediate target
  ``spent + autoencoder_share * (target - spent)`` given what the ledger already holds, the GAN phase against
  the full target given the autoencoder entries. Training stops before the target would be exceeded.
- Sampling rates use the DP row count ``metadata_.n_rows``, never ``len(frame)``.
- Encoding bounds and categories come from the public schema or DP metadata (never min/max of the rows,
  which seed 003 App. E uses).
- The saved file holds the generator, the decoder, the transformer state (public/DP), and the ledger.
- ``epsilon=inf``: no clipping and no noise (the paper's non-private upper reference); ledger epsilon inf.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpsynth.data.row_store import check_row_backend
from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._auto_gan_train import train_autoencoder, train_gan
from dpsynth.models.base import MARGINAL_REFERENCE_ROWS, Synthesizer
from dpsynth.models.marginal_map import CategoryWeights
from dpsynth.models.networks.autoencoder import Decoder, Encoder
from dpsynth.models.networks.gan import Critic, LatentGenerator
from dpsynth.models.phase import DPPhase, budget_summary, choose_width

__all__ = ["DPAutoGAN"]

_SAMPLE_CHUNK = 131_072
#: sizing rule of the DP phases (dpsynth.models.phase): batches up to 512 rows; at least 200 autoencoder steps and
#: 1000 critic steps (a GAN needs many generator updates: one per critic_iters critic steps)
LARGEST_BATCH = 512
MIN_STEPS = {"autoencoder": 200, "gan": 1000}
#: a 1% tolerance on sigma costs ~1% of the budget's use and never overshoots (the sigma returned was evaluated)
CALIBRATION_RTOL = 0.01
#: widths tuned on Adult: the most the width rule gives (dpsynth.models.phase.choose_width)
AUTOENCODER_WIDTH, CRITIC_WIDTH = 64, 70


@register
class DPAutoGAN(Synthesizer):
    """DP-auto-GAN with honest accounting. All arguments are keyword-only hyper-parameters, named as in every
    dpsynth model: ``<phase>_epochs``, ``<phase>_batch_size``, ``<phase>_max_grad_norm``, ``<phase>_share`` for the
    DP phases ``autoencoder`` and ``gan``.

    Architecture: ``autoencoder_hidden`` / ``latent_dim`` (encoder; the decoder mirrors it), ``noise_dim`` /
    ``generator_hidden`` (residual generator), ``critic_hidden``; ``None`` (default) sizes the autoencoder and
    critic layers by the encoded width (:func:`dpsynth.models.phase.choose_width`; Adult: (64,) and (70, 35)).
    Autoencoder phase: ``autoencoder_epochs`` passes
    of DP-SGD with expected batch ``autoencoder_batch_size`` (``None``: the data-following rule of
    :func:`dpsynth.models.phase.choose_batch_size`, up to 512 rows and at least 200 steps), Adam
    (``autoencoder_learning_rate``), clipping norm ``autoencoder_max_grad_norm``, budget share
    ``autoencoder_share``; ``encoder`` is ``"dp"`` (trained with DP-SGD with the decoder, default) or ``"frozen"``
    (random init). GAN phase: ``gan_epochs`` passes of DP-SGD on the critic with expected batch ``gan_batch_size``
    (``None``: up to 512 rows and at least 1000 critic steps), ``critic_iters`` critic steps per generator step, Adam
    (betas 0.5, 0.9) learning rates ``critic_learning_rate`` / ``generator_learning_rate``, clipping norm
    ``gan_max_grad_norm``, ``critic_loss`` in ``"wgan-gp"``, ``"wgan"``, ``"bce"`` (``gp_weight`` for the
    penalty), Gumbel-softmax temperature ``gumbel_tau`` for decoded categories. ``match_marginals`` maps sampled
    numeric columns, rank-preserving, onto the DP metadata histograms and shifts category logits to the DP category
    counts (argmax sampling only; :mod:`dpsynth.models.marginal_map`; post-processing, no ledger event).
    ``numeric`` is the transformer's numeric encoding; ``categorical_sampling`` (``"argmax"`` or ``"sample"``)
    decodes categories at sampling time. ``calibration_accountant`` (``"pld"`` or the faster, slightly more
    conservative ``"rdp"``) only chooses how noise multipliers are calibrated; the guarantee is always what the
    ledger proves. On Adult (32,561 rows) the defaults give 1,018 autoencoder and 1,527 critic steps of 512 rows.
    ``backend``: ``"numpy"`` fits a pandas frame in memory; ``"duckdb"`` / ``"spark"`` take a Parquet / CSV path (or a
    Spark DataFrame): the metadata phase runs in the engine, the rows are encoded onto disk in chunks and each DP-SGD
    step reads its Poisson sample by position (:mod:`dpsynth.data.row_store`). Same plan and ledger as from a frame.
    """

    name = "dp-auto-gan"
    reads_tables = True  # fit(path, backend="duckdb"): rows encoded onto disk, read by Poisson batch
    phases = ("metadata", "autoencoder", "gan")
    zero_allowed = ("gp_weight",)  # 0 is meaningful (see check_params)
    # names before dpsynth 0.2's one vocabulary; the step counts became epochs (training only: sampling unaffected)
    renamed_params = {"ae_hidden": "autoencoder_hidden", "ae_batch_size": "autoencoder_batch_size",
                      "ae_lr": "autoencoder_learning_rate", "ae_max_grad_norm": "autoencoder_max_grad_norm",
                      "ae_budget_share": "autoencoder_share", "critic_lr": "critic_learning_rate",
                      "generator_lr": "generator_learning_rate", "critic_max_grad_norm": "gan_max_grad_norm",
                      "ae_steps": None, "critic_steps": None}
    #: the metadata phase's default share (as DP-TLDM's: marginals mapped onto its DP histograms; README, "Budget
    #: splits")
    default_metadata_share = 0.3
    fast_params = {"autoencoder_epochs": 1.0, "autoencoder_batch_size": 32, "gan_epochs": 1.0, "gan_batch_size": 32,
                   "critic_iters": 3, "autoencoder_hidden": (32,), "latent_dim": 8, "noise_dim": 16,
                   "generator_hidden": (16,), "critic_hidden": (32,), "calibration_accountant": "rdp"}

    def __init__(
        self,
        *,
        numeric: str = "minmax",
        latent_dim: int = 16,
        autoencoder_hidden: tuple[int, ...] | None = None,
        noise_dim: int = 64,
        generator_hidden: tuple[int, ...] = (64, 64),
        critic_hidden: tuple[int, ...] | None = None,
        encoder: str = "dp",
        autoencoder_epochs: float = 16.0,
        autoencoder_batch_size: int | None = None,
        autoencoder_learning_rate: float = 0.005,
        autoencoder_max_grad_norm: float = 1.0,
        autoencoder_share: float = 0.5,
        gan_epochs: float = 24.0,
        gan_batch_size: int | None = None,
        critic_iters: int = 5,
        critic_learning_rate: float = 0.002,
        generator_learning_rate: float = 0.002,
        gan_max_grad_norm: float = 1.0,
        critic_loss: str = "bce",
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        categorical_sampling: str = "argmax",
        calibration_accountant: str = "pld",
        match_marginals: bool = True,
        backend: str = "numpy",
    ):
        self.numeric = numeric
        self.latent_dim = latent_dim
        self.autoencoder_hidden = _as_tuple(autoencoder_hidden)  # checked in check_params
        self.noise_dim = noise_dim
        self.generator_hidden = _as_tuple(generator_hidden)
        self.critic_hidden = _as_tuple(critic_hidden)
        self.encoder = encoder
        self.autoencoder_epochs = autoencoder_epochs
        self.autoencoder_batch_size = autoencoder_batch_size
        self.autoencoder_learning_rate = autoencoder_learning_rate
        self.autoencoder_max_grad_norm = autoencoder_max_grad_norm
        self.autoencoder_share = autoencoder_share
        self.gan_epochs = gan_epochs
        self.gan_batch_size = gan_batch_size
        self.critic_iters = critic_iters
        self.critic_learning_rate = critic_learning_rate
        self.generator_learning_rate = generator_learning_rate
        self.gan_max_grad_norm = gan_max_grad_norm
        self.critic_loss = critic_loss
        self.gp_weight = gp_weight
        self.gumbel_tau = gumbel_tau
        self.categorical_sampling = categorical_sampling
        self.calibration_accountant = calibration_accountant
        self.match_marginals = match_marginals
        self.backend = backend

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        if self.encoder not in ("dp", "frozen"):
            raise InputError(f"encoder must be 'dp' or 'frozen'. Found {self.encoder!r}.")
        if self.critic_loss not in ("wgan-gp", "wgan", "bce"):
            raise InputError(f"critic_loss must be 'wgan-gp', 'wgan' or 'bce'. Found {self.critic_loss!r}.")
        if self.categorical_sampling not in ("argmax", "sample"):
            raise InputError(f"categorical_sampling must be 'argmax' or 'sample'. Found {self.categorical_sampling!r}.")
        if self.calibration_accountant not in ("pld", "rdp"):
            raise InputError(f"calibration_accountant must be 'pld' or 'rdp'. Found {self.calibration_accountant!r}.")
        if not 0.0 < self.autoencoder_share < 1.0:
            raise InputError(f"autoencoder_share must be in (0, 1). Found {self.autoencoder_share}.")
        check_row_backend(self)

    # ------------------------------------------------------------------ networks
    def _widths(self, data_dim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Autoencoder and critic layers: as given, or by the width rule (dpsynth.models.phase.choose_width) from
        the encoded width, at most the Adult-tuned (64,) and (70, 35), which Adult keeps."""
        autoencoder = self.autoencoder_hidden or (choose_width(data_dim, tuned=AUTOENCODER_WIDTH),)
        wide = choose_width(data_dim, tuned=CRITIC_WIDTH)
        return autoencoder, self.critic_hidden or (wide, wide // 2)

    def _build(self, data_dim: int) -> None:
        autoencoder, critic = self._widths(data_dim)
        self.encoder_net_ = Encoder(data_dim, autoencoder, self.latent_dim)
        self.decoder_ = Decoder(self.latent_dim, autoencoder, data_dim)
        self.generator_ = LatentGenerator(self.noise_dim, self.generator_hidden, self.latent_dim)
        self.critic_ = Critic(data_dim, critic)

    def _spans(self) -> list[tuple[int, int, str]]:
        return [(int(s.start), int(s.end), str(s.activation)) for s in self.transformer_.output_info]

    # ------------------------------------------------------------------ fit
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        from dpsynth.data.transformers import TableTransformer

        self._check_params()
        t0 = time.perf_counter()
        transformer = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot")
        if self.ledger_.non_private:
            transformer.fit_exact(frame, non_private=True, rng=rng)
        else:
            transformer.fit(self.metadata_, rng=rng)
        self.transformer_ = transformer
        x = torch.as_tensor(np.ascontiguousarray(transformer.transform(frame, rng=rng)), dtype=torch.float32)
        self._train(x, rng=rng, progress=progress, t0=t0)

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit from a file (or a Spark DataFrame): the rows are encoded onto disk once, the encoding fitted on the
        metadata (DP; exact counts in the non-private mode), and every DP-SGD step reads its Poisson sample by
        position (:mod:`dpsynth.data.row_store`): memory does not grow with the rows."""
        from dpsynth.data.row_store import rows_on_disk
        from dpsynth.data.transformers import TableTransformer

        self._check_params()
        t0 = time.perf_counter()
        self.transformer_ = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot")
        self.transformer_.fit(self.metadata_, rng=rng)
        with rows_on_disk(table, self.schema_, self.transformer_, rng=rng, exact=self.ledger_.non_private) as rows:
            self._train(rows, rng=rng, progress=progress, t0=t0)

    def _train(self, x, *, rng: np.random.Generator, progress: bool, t0: float) -> None:
        """The autoencoder and GAN phases on the encoded rows ``x`` (a tensor, or rows on disk: read only as
        ``x[positions]``, ``len(x)`` and ``x.shape``)."""
        ledger = self.ledger_
        spans = self._spans()
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(seed + 1)
            self._build(self.transformer_.output_dim)
        n_dp = float(self.metadata_.n_rows)
        spent = ledger.epsilon()
        target = ledger.target_epsilon
        common = {"ledger": ledger, "n_dp": n_dp, "largest_batch": LARGEST_BATCH,
                  "accountant": self.calibration_accountant, "rtol": CALIBRATION_RTOL}
        ae_phase = DPPhase("autoencoder", epochs=self.autoencoder_epochs, batch_size=self.autoencoder_batch_size,
                           min_steps=MIN_STEPS["autoencoder"], max_grad_norm=self.autoencoder_max_grad_norm,
                           target_epsilon=target if ledger.non_private
                           else spent + self.autoencoder_share * (target - spent), **common)
        train_autoencoder(self.encoder_net_, self.decoder_, x, spans, phase=ae_phase,
                          frozen_encoder=self.encoder == "frozen", learning_rate=self.autoencoder_learning_rate,
                          generator=gen, progress=progress)
        gan_phase = DPPhase("gan", epochs=self.gan_epochs, batch_size=self.gan_batch_size,
                            min_steps=MIN_STEPS["gan"], max_grad_norm=self.gan_max_grad_norm, target_epsilon=target,
                            **common)
        train_gan(self.generator_, self.decoder_, self.critic_, x, spans, phase=gan_phase, params=self.get_params(),
                  generator=gen, progress=progress)
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=[ae_phase, gan_phase],
                                      shares={"autoencoder": self.autoencoder_share, "gan": 1.0})
        self.fit_seconds_ = time.perf_counter() - t0  # depends on the exact row count: in memory only, never saved
        self.critic_ = None  # DP too, but not needed for sampling: not kept, not saved
        self.encoder_net_ = None
        self.category_weights_ = None
        if self.match_marginals and self.categorical_sampling == "argmax":
            # post-processing: decoded rows of the DP model + DP slot counts (see marginal_map.py)
            self.generator_.eval()
            self.decoder_.eval()
            with torch.no_grad():
                z = torch.randn(MARGINAL_REFERENCE_ROWS, self.noise_dim, generator=gen)
                reference = self._decode_rows(z)
            self.category_weights_ = CategoryWeights.fit(reference, self.transformer_, mode="logits",
                                                         sigma=self.metadata_.sigmas())

    # ------------------------------------------------------------------ sample
    @torch.no_grad()
    def _decode_rows(self, z: torch.Tensor) -> np.ndarray:
        """Decoder outputs with the numeric activations applied; softmax spans stay logits (the transformer
        takes their argmax, or samples from their softmax, on inverse transform)."""
        raw = self.decoder_(self.generator_(z))
        for start, end, act in self._spans():
            if act == "tanh":
                raw[:, start:end] = torch.tanh(raw[:, start:end])
        return raw.numpy()

    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        self.generator_.eval()
        self.decoder_.eval()
        softmax = "argmax" if self.categorical_sampling == "argmax" else "logits"
        parts = []
        for start in range(0, n, _SAMPLE_CHUNK):
            z = torch.randn(min(_SAMPLE_CHUNK, n - start), self.noise_dim, generator=gen)
            rows = self._decode_rows(z)
            if self.category_weights_ is not None:
                rows = self.category_weights_.apply(rows)
            parts.append(self.transformer_.inverse_transform(rows, rng=rng, softmax=softmax))
        if not parts:
            return self.transformer_.inverse_transform(np.zeros((0, self.transformer_.output_dim), np.float32))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    # ------------------------------------------------------------------ persistence
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"generator.{k}": v for k, v in self.generator_.state_dict().items()}
        tensors.update({f"decoder.{k}": v for k, v in self.decoder_.state_dict().items()})
        state = {
            "transformer": self.transformer_.to_dict(),
            "data_dim": int(self.decoder_.net[-1].out_features),
            "budget": self.budget_,
            "category_weights": None if self.category_weights_ is None else self.category_weights_.to_dict(),
        }
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        from dpsynth.data.transformers import TableTransformer

        self.transformer_ = TableTransformer.from_dict(state["transformer"])
        data_dim = int(state["data_dim"])
        self.decoder_ = Decoder(self.latent_dim, self._widths(data_dim)[0], data_dim)
        self.generator_ = LatentGenerator(self.noise_dim, self.generator_hidden, self.latent_dim)
        for prefix, module in (("generator.", self.generator_), ("decoder.", self.decoder_)):
            sub = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
            module.load_state_dict(sub, strict=True)
        self.budget_ = state.get("budget") or state.get("training", {})  # "training": files before 0.2
        weights = state.get("category_weights")
        self.category_weights_ = None if weights is None else CategoryWeights.from_dict(weights)
        self.critic_ = None
        self.encoder_net_ = None


def _as_tuple(value: Any) -> Any:
    """Layer sizes as a tuple (a list from JSON or the CLI is accepted); anything else is left for check_params."""
    return tuple(value) if isinstance(value, (list, tuple)) else value
