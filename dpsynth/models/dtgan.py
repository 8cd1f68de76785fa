"""DTGAN_D (seed 002, Kunar et al.): a conditional tabular WGAN-GP whose discriminator is trained with DP-SGD.

Algorithm (seed 002 §3.1-3.2 on the shared core :mod:`dpsynth.models._conditional_gan`, with the privacy fixes of
DESIGN.md §1):

1. **Metadata** (``phase="metadata"``): public schema or DP discovery, DP row count and DP histograms. The CTAB-GAN+
   / CTGAN encoding (mode-specific normalisation of numbers, one-hot categories; ``numeric``) is fitted on them.
2. **Classifier** (``phase="classifier"``, when the schema's target is categorical and ``classifier_share > 0``): an
   MLP of ``classifier_hidden`` layers predicting the target from the other columns, trained with DP-SGD on
   ``classifier_share`` of the budget left after the metadata.
3. **Discriminator** (``phase="gan"``): DP-SGD on the conditional WGAN-GP loss with seed 002's spherical
   interpolates (``gp_weight`` = 10); the per-example unit is a real row with its fake partner and its penalty (the
   core's docstring derives it); Poisson sampling at q = B / n_dp, sensitivity C = ``gan_max_grad_norm``. Every
   ``critic_iters`` steps the generator takes one post-processing step: Wasserstein loss on generated rows, CTGAN's
   condition loss, and the classifier's cross-entropy at weight ``classifier_weight``.

Where seed 002 does not hold (and what is done instead):
- Corollary 1 composes B Gaussian mechanisms per step, each "per data point", for ``(lambda, 2 B lambda /
  sigma^2)``-RDP: the noise is added once to the clipped *sum* of the batch, and one row moves that sum by at most
  C under add/remove; a step is one subsampled Gaussian mechanism of multiplier sigma (``PoissonSampledDpEvent``),
  accounted with PLD by the ledger.
- The fake term and the gradient penalty are "left undisturbed" in the seed; here they depend on the real row (its
  condition, its interpolate), so they are clipped and noised with it.
- Training-by-sampling (choosing real rows by a sampled condition) is replaced by reading the condition off the
  Poisson-sampled row; the information loss is not used (it reads real-row feature statistics outside any
  mechanism).
- No PacGAN packing here (``dtgan-g`` and ``dp-sactgan`` have ``pac``): a pack of real rows would be one clipped
  unit, and which rows share a pack depends on the whole Poisson sample, so adding one record re-cuts the packs
  after it and changes many units: the sensitivity would no longer be C.

Privacy guarantees: every access to private rows is a DP-SGD step in ``ledger_`` (phases ``"classifier"``,
``"gan"``), calibrated with the ledger so the composed epsilon stays at most the target; sampling rates use the
DP row count; the encoding reads DP metadata only. ``match_marginals`` (default on) reweights category logits to the
DP counts and maps numbers onto the DP histograms (post-processing). The file holds the generator, the
transformer state and the ledger (not the discriminator or the classifier). ``epsilon=inf``: no clipping, no noise.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpsynth.data.row_store import check_row_backend
from dpsynth.errors import InputError
from dpsynth.models import register
from dpsynth.models._conditional_gan import (
    Conditions,
    target_span,
    train_classifier,
    train_conditional_wgan,
    train_sanitized_generator,
)
from dpsynth.models.base import MARGINAL_REFERENCE_ROWS, Synthesizer
from dpsynth.models.marginal_map import CategoryWeights
from dpsynth.models.networks.autoencoder import mlp
from dpsynth.models.networks.ctgan import ConditionalGenerator, Packed
from dpsynth.models.networks.gan import Critic
from dpsynth.models.phase import DPPhase, budget_summary, choose_width, json_number

__all__ = ["DTGANDiscriminator", "DTGANGenerator"]

_SAMPLE_CHUNK = 65_536
#: sizing rule of the DP phases (dpsynth.models.phase): batches up to 512 rows; at least 1000 discriminator steps;
#: the default caps (hyper-parameters ``gan_max_steps`` / ``classifier_max_steps``) keep the work of a fit bounded on
#: large tables and sit above what Adult needs (1,527 critic and 509 classifier steps)
LARGEST_BATCH = 512
MIN_STEPS = {"classifier": 200, "gan": 1000}
MAX_STEPS = {"classifier": 600, "gan": 2000}
CALIBRATION_RTOL = 0.01
#: the widest critic / classifier layers the width rule gives
CRITIC_WIDTH, CLASSIFIER_WIDTH = 128, 64


class ConditionalGANModel(Synthesizer):
    """What the conditional GAN models share (``dtgan-d``, ``dtgan-g``, ``dp-ctgan``, ``dp-sactgan``, ``ctgan``): the
    encoding, sampling with DP-count conditions, the marginal reweighting, and the model file (the generator and
    the transformer state; no discriminator, no classifier). Decoding a generated row's category logits: with the
    marginal map (``match_marginals``, the DP models' default) the most likely slot after its reweighting, which is
    what the map's weights are fitted for; without it a draw from their softmax - the Gumbel-softmax the critic saw
    in training is such a draw, and the most likely slot alone would give every row the majority category of
    whatever the generator is unsure about."""

    #: rows per generator call when sampling: small enough that a layer's activations stay in the core's cache
    generate_batch = 4096
    noise_dim: int
    generator_hidden: tuple[int, ...]
    classifier_hidden: tuple[int, ...] | None
    numeric: str
    max_modes: int
    match_marginals: bool
    classifier_share: float

    def _keep(self, params: dict[str, Any]) -> None:
        """Store the ``__init__`` arguments as attributes (layer lists as tuples), scikit-learn's convention."""
        for name, value in params.items():
            if name not in ("self", "__class__"):
                setattr(self, name, layer_sizes(value) if name.endswith("_hidden") else value)

    def _check_params(self) -> None:
        from dpsynth.data.transformers.numeric import NUMERIC_METHODS

        if self.numeric not in NUMERIC_METHODS:
            raise InputError(f"numeric must be one of {', '.join(NUMERIC_METHODS)}. Found {self.numeric!r}.")
        if not 0.0 <= self.classifier_share < 1.0:
            raise InputError(f"classifier_share must be in [0, 1). Found {self.classifier_share}.")
        check_row_backend(self)

    def _spans(self) -> list[tuple[int, int, str]]:
        return [(int(s.start), int(s.end), str(s.activation)) for s in self.transformer_.output_info]

    def _widths(self, data_dim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Critic and classifier layers: as given, or by the width rule from the encoded width (4 classifier layers,
        seed 000's auxiliary classifier)."""
        wide = choose_width(data_dim, tuned=CRITIC_WIDTH)
        narrow = choose_width(data_dim, tuned=CLASSIFIER_WIDTH)
        return getattr(self, "critic_hidden", None) or (wide, wide), self.classifier_hidden or (narrow,) * 4

    def _new_generator(self, cond_dim: int, data_dim: int) -> torch.nn.Module:
        return ConditionalGenerator(self.noise_dim, cond_dim, self.generator_hidden, data_dim)

    def _new_critic(self, data_dim: int, cond_dim: int, hidden: tuple[int, ...], pac: int = 1) -> torch.nn.Module:
        """A critic of ``[row, cond]``; of ``pac`` such rows packed together (PacGAN) when ``pac`` > 1."""
        if pac == 1:
            return Critic(data_dim + cond_dim, hidden)
        return Packed(Critic(pac * (data_dim + cond_dim), hidden), pac)

    def _encode(self, frame: pd.DataFrame, rng: np.random.Generator) -> torch.Tensor:
        """Fit the CTAB-GAN+ / CTGAN encoding on the DP metadata (exact statistics only at epsilon = inf) and encode
        the rows (a fixed function of each row)."""
        from dpsynth.data.transformers import TableTransformer

        transformer = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot",
                                       max_modes=self.max_modes)
        if self.ledger_.non_private:
            transformer.fit_exact(frame, non_private=True, rng=rng)
        else:
            transformer.fit(self.metadata_, rng=rng)
        self.transformer_ = transformer
        return torch.as_tensor(np.ascontiguousarray(transformer.transform(frame, rng=rng)), dtype=torch.float32)

    def _encode_table(self, table, rng: np.random.Generator):
        """The rows of an engine-held table encoded onto disk (:func:`dpsynth.data.row_store.encode_table`), the
        encoding fitted on the metadata (DP; exact counts in the non-private mode)."""
        from dpsynth.data.row_store import encode_table
        from dpsynth.data.transformers import TableTransformer

        transformer = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot",
                                       max_modes=self.max_modes)
        transformer.fit(self.metadata_, rng=rng)
        self.transformer_ = transformer
        return encode_table(table, self.schema_, transformer, rng=rng, exact=self.ledger_.non_private)

    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        self._check_params()
        t0 = time.perf_counter()
        self._train(self._encode(frame, rng), rng=rng, progress=progress)
        self.fit_seconds_ = time.perf_counter() - t0  # depends on the exact row count: in memory only, never saved

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit from a file (or a Spark DataFrame): the rows are encoded onto disk once and every read of them is by
        position (:mod:`dpsynth.data.row_store`), so memory does not grow with the rows."""
        self._check_params()
        t0 = time.perf_counter()
        rows = self._encode_table(table, rng)
        try:
            self._train(rows, rng=rng, progress=progress)
        finally:
            rows.close()
        self.fit_seconds_ = time.perf_counter() - t0

    def _train(self, x, *, rng: np.random.Generator, progress: bool) -> None:
        """Train on the encoded rows ``x``: a tensor, or rows on disk (:class:`~dpsynth.data.row_store.EncodedRows`),
        read only as ``x[positions]``, ``len(x)`` and ``x.shape``."""
        raise NotImplementedError

    def _fit_category_weights(self, gen: torch.Generator) -> None:
        self.category_weights_ = None
        if self.match_marginals:
            # post-processing: generated rows of the DP model + DP slot counts (see marginal_map.py)
            reference = self._generate(MARGINAL_REFERENCE_ROWS, gen)
            self.category_weights_ = CategoryWeights.fit(reference, self.transformer_, mode="logits",
                                                         sigma=self.metadata_.sigmas())

    # ------------------------------------------------------------------ sample
    @torch.no_grad()
    def _generate(self, n: int, gen: torch.Generator) -> np.ndarray:
        """Generated rows with numeric activations applied; softmax spans stay logits. Conditions are drawn from
        the DP category counts (CTGAN samples with the plain frequencies too)."""
        self.generator_.eval()
        cond, _ = Conditions(self.transformer_).public(n, gen)
        z = torch.randn(n, self.noise_dim, generator=gen)
        out = torch.empty(n, self.transformer_.output_dim)
        tanh = [(start, end) for start, end, act in self._spans() if act == "tanh"]
        # a few thousand rows at a time (generate_batch): the activations then stay in cache
        for a in range(0, n, self.generate_batch):
            b = min(a + self.generate_batch, n)
            raw = self.generator_(z[a:b], cond[a:b])
            for start, end in tanh:
                raw[:, start:end] = torch.tanh(raw[:, start:end])
            out[a:b] = raw
        return out.numpy()

    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        parts = []
        for start in range(0, n, _SAMPLE_CHUNK):
            rows = self._generate(min(_SAMPLE_CHUNK, n - start), gen)
            if self.category_weights_ is not None:
                rows = self.category_weights_.apply(rows, inplace=True)  # rows: ours
                softmax = "argmax"  # the weights are fitted for argmax decoding (CategoryWeights, mode "logits")
            else:
                softmax = "logits"  # a draw from the softmax, as the critic saw in training (class docstring)
            parts.append(self.transformer_.inverse_transform(rows, rng=rng, softmax=softmax))
        if not parts:
            return self.transformer_.inverse_transform(np.zeros((0, self.transformer_.output_dim), np.float32))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    # ------------------------------------------------------------------ persistence
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"generator.{k}": v for k, v in self.generator_.state_dict().items()}
        state = {
            "transformer": self.transformer_.to_dict(),
            "data_dim": int(self.transformer_.output_dim),
            "budget": self.budget_,
            "category_weights": None if self.category_weights_ is None else self.category_weights_.to_dict(),
        }
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        from dpsynth.data.transformers import TableTransformer

        self.transformer_ = TableTransformer.from_dict(state["transformer"])
        cond_dim = Conditions(self.transformer_).dim
        self.generator_ = self._new_generator(cond_dim, int(state["data_dim"]))
        sub = {k[len("generator."):]: v for k, v in tensors.items() if k.startswith("generator.")}
        self.generator_.load_state_dict(sub, strict=True)
        self.budget_ = state["budget"]
        weights = state.get("category_weights")
        self.category_weights_ = None if weights is None else CategoryWeights.from_dict(weights)




@register
class DTGANDiscriminator(ConditionalGANModel):
    """DTGAN_D with honest accounting (see the module docstring). Keyword-only hyper-parameters, named as in every
    dpsynth model (``<phase>_epochs``, ``<phase>_batch_size``, ``<phase>_max_grad_norm``, ``<phase>_share``).

    Networks: ``noise_dim``, ``generator_hidden`` (CTGAN residual blocks), ``critic_hidden`` and ``classifier_hidden``
    (``None``: sized by the encoded width, :func:`dpsynth.models.phase.choose_width`; the classifier has 4 layers).
    Discriminator phase: ``gan_epochs`` passes of DP-SGD with expected batch ``gan_batch_size`` (``None``: up to 512
    rows and at least 1000 steps), at most ``gan_max_steps`` steps (2,000: on a large table the cap, not the passes,
    bounds the work; Census KDD's 199,523 rows get about 5 passes), ``critic_iters`` discriminator steps per
    generator step, Adam (0.5, 0.9) at ``critic_learning_rate`` / ``generator_learning_rate``, clipping norm
    ``gan_max_grad_norm``, penalty weight ``gp_weight``, Gumbel-softmax temperature ``gumbel_tau``. Classifier phase:
    ``classifier_share`` of the budget after the metadata (0 turns the classifier off; it is off anyway without a
    categorical target), ``classifier_epochs``, ``classifier_batch_size``, ``classifier_max_steps`` (600),
    ``classifier_learning_rate``, ``classifier_max_grad_norm``, and the generator's ``classifier_weight``.
    ``numeric``: the transformer's numeric encoding (``"mode_specific"``, CTAB-GAN+'s; ``max_modes`` components).
    ``calibration_accountant`` only picks how sigma is calibrated.
    ``log_frequency``: the generator trains on CTGAN's log-frequency conditions (see :mod:`._conditional_gan`).
    ``backend``: ``"numpy"`` fits a pandas frame in memory; ``"duckdb"`` / ``"spark"`` take a Parquet / CSV path
    (or a Spark DataFrame): the metadata phase runs in the engine, the rows are encoded onto disk in chunks and each
    DP-SGD step reads only its Poisson sample (:mod:`dpsynth.data.row_store`), so memory does not grow with the rows.
    Same mechanisms, plan and ledger as from a frame; the encoding is fitted on the metadata even at epsilon = inf.
    """

    name = "dtgan-d"
    phases = ("metadata", "classifier", "gan")
    reads_tables = True  # fit(path, backend="duckdb"): rows encoded onto disk, read by Poisson batch
    interpolation = "spherical"  # seed 002's penalty interpolates (dp-ctgan: "linear")
    zero_allowed = ("gp_weight", "classifier_share", "classifier_weight")
    default_metadata_share = 0.3
    fast_params = {"gan_epochs": 1.0, "gan_batch_size": 32, "critic_iters": 3, "noise_dim": 16,
                   "generator_hidden": (32,), "critic_hidden": (32,), "classifier_hidden": (16,),
                   "classifier_epochs": 1.0, "classifier_batch_size": 32, "calibration_accountant": "rdp",
                   "max_modes": 3}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        max_modes: int = 10,
        noise_dim: int = 128,
        generator_hidden: tuple[int, ...] = (256, 256),
        critic_hidden: tuple[int, ...] | None = None,
        classifier_hidden: tuple[int, ...] | None = None,
        gan_epochs: float = 24.0,
        gan_batch_size: int | None = None,
        gan_max_steps: int = MAX_STEPS["gan"],
        critic_iters: int = 5,
        critic_learning_rate: float = 0.002,
        generator_learning_rate: float = 0.002,
        gan_max_grad_norm: float = 1.0,
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        classifier_share: float = 0.15,
        classifier_epochs: float = 8.0,
        classifier_batch_size: int | None = None,
        classifier_max_steps: int = MAX_STEPS["classifier"],
        classifier_learning_rate: float = 0.005,
        classifier_max_grad_norm: float = 1.0,
        classifier_weight: float = 1.0,
        calibration_accountant: str = "pld",
        log_frequency: bool = False,
        match_marginals: bool = True,
        backend: str = "numpy",
    ):
        self._keep(locals())

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        super()._check_params()
        if self.calibration_accountant not in ("pld", "rdp"):
            raise InputError(f"calibration_accountant must be 'pld' or 'rdp'. Found {self.calibration_accountant!r}.")

    # ------------------------------------------------------------------ fit
    def _train(self, x, *, rng: np.random.Generator, progress: bool) -> None:
        """The classifier and GAN phases on the encoded rows ``x`` (a tensor, or rows on disk: indexed by the
        sampler's positions only)."""
        ledger = self.ledger_
        transformer = self.transformer_
        conditions = Conditions(transformer)
        class_span = target_span(transformer, self.schema_.target)
        use_classifier = class_span is not None and self.classifier_share > 0
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        data_dim = x.shape[1]
        critic_hidden, classifier_hidden = self._widths(data_dim)
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(seed + 1)
            self.generator_ = self._new_generator(conditions.dim, data_dim)
            critic = self._new_critic(data_dim, conditions.dim, critic_hidden)
            classifier = mlp(data_dim, classifier_hidden, class_span.width) if use_classifier else None
        n_dp = float(self.metadata_.n_rows)
        spent, target = ledger.epsilon(), ledger.target_epsilon
        common = {"ledger": ledger, "n_dp": n_dp, "largest_batch": LARGEST_BATCH,
                  "accountant": self.calibration_accountant, "rtol": CALIBRATION_RTOL}
        phases: list[DPPhase] = []
        if use_classifier:
            clf_phase = DPPhase("classifier", epochs=self.classifier_epochs, batch_size=self.classifier_batch_size,
                                min_steps=MIN_STEPS["classifier"], max_steps=self.classifier_max_steps,
                                max_grad_norm=self.classifier_max_grad_norm,
                                target_epsilon=target if ledger.non_private
                                else spent + self.classifier_share * (target - spent), **common)
            train_classifier(classifier, x, class_span, phase=clf_phase,
                             learning_rate=self.classifier_learning_rate, generator=gen, progress=progress,
                             label=self.name)
            phases.append(clf_phase)
        gan_phase = DPPhase("gan", epochs=self.gan_epochs, batch_size=self.gan_batch_size, min_steps=MIN_STEPS["gan"],
                            max_steps=self.gan_max_steps, max_grad_norm=self.gan_max_grad_norm,
                            target_epsilon=target, **common)
        train_conditional_wgan(self.generator_, critic, x, conditions=conditions, spans=self._spans(),
                               phase=gan_phase, params={**self.get_params(), "interpolation": self.interpolation},
                               generator=gen, progress=progress,
                               label=self.name, classifier=classifier, class_span=class_span)
        phases.append(gan_phase)
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=phases,
                                      shares={"classifier": self.classifier_share, "gan": 1.0})
        self._fit_category_weights(gen)

@register
class DTGANGenerator(ConditionalGANModel):
    """DTGAN_G (seed 002 §3.3) with honest accounting: ``n_shards`` discriminators trained WITHOUT DP on disjoint
    shards of the rows (each row's shard drawn i.i.d. uniformly), and a generator that sees them only through the
    gradient sanitizer (GS-WGAN's hook, :mod:`dpsynth.privacy.sanitizer`).

    Accounting (neighbouring relation: add/remove one record): the record lands in one shard and may change that
    shard's discriminator arbitrarily, so each of the B generated rows' gradients from it may move anywhere in the
    C-ball: a step releases a (B x d) matrix of L2 sensitivity 2 C sqrt(B) with noise std 2 C sigma, one Gaussian
    mechanism of multiplier sigma / sqrt(B), and it reads the record's shard with probability 1 / n_shards (one
    discriminator drawn per step): ``SampledWithoutReplacementDpEvent(n_shards, 1, Gaussian(sigma / sqrt(B)))``,
    accounted by replace-one subsampled RDP (Wang et al. 2019, as GS-WGAN). sigma is calibrated with the ledger so
    that ``generator_steps`` such steps, after the metadata and classifier phases, reach at most the target.

    Where seed 002's Corollary 2 does not hold: it charges (lambda, 2 lambda / sigma^2)-RDP per *row* and adds B of
    them, as if each row's sanitized gradient were a separate mechanism on a separate record; but one record changes
    the discriminator behind all B rows of a step at once, so the sensitivity is that of the whole batch (2 C sqrt(B))
    and the step is one mechanism — the corollary's B-fold composition is not a bound on anything (with its noise
    2 C sigma per row it would understate the multiplier by sqrt(B)). Its information loss (discriminator features of
    real rows) is a third path into the generator that the corollary charges as another sanitized gradient; here it
    is not used. Its classification loss is a classifier trained on real rows; here the classifier is trained with
    DP-SGD in its own phase, so its gradients are post-processing and need no sanitizing.

    What the noise costs (calibrated): for 0.7 of epsilon = 1 (delta 1e-5), 2,000 steps of B = 64 rows need sigma =
    2,020 with one discriminator (q = 1), 407 with 10 shards (replace-one amplification at q = 0.1 is weak) and 41
    with 100 shards (the default): noise std 82 on each coordinate of each row's gradient against a clipped norm
    of 1. That is why GS-WGAN uses ~1,000 discriminators and why seed 002 finds DTGAN_G behind DTGAN_D.

    ``epsilon=inf`` (the papers' non-private reference): one discriminator on all rows, no sanitizer noise; shards
    would only starve the discriminators (``budget_`` records the ``n_shards`` used).

    Hyper-parameters: ``n_shards``, ``generator_steps``, ``batch_size`` (B, the rows of a generator step and of a
    discriminator step), ``critic_iters`` discriminator steps on the drawn shard per generator step, Adam (0.5, 0.9)
    learning rates, clipping norm ``generator_max_grad_norm`` (C), ``gp_weight``, ``gumbel_tau``; the classifier
    phase, the networks and ``log_frequency`` as in ``dtgan-d``. ``pac`` > 1: PacGAN, each discriminator scores
    packs of ``pac`` rows (``batch_size`` must be a multiple). The accounting is unchanged: the discriminators are
    not private anyway, and the sanitizer still clips each generated row's gradient, whatever its pack.
    ``backend``: as in ``dtgan-d`` (``"duckdb"`` / ``"spark"``: a file's rows encoded onto disk; the shard
    discriminators read their rows from there by position).
    """

    name = "dtgan-g"
    reads_tables = True  # fit(path, backend="duckdb"): rows encoded onto disk, each read by position
    phases = ("metadata", "classifier", "generator")
    zero_allowed = ("gp_weight", "classifier_share", "classifier_weight")
    default_metadata_share = 0.3
    fast_params = {"generator_steps": 30, "batch_size": 32, "critic_iters": 2, "n_shards": 4, "noise_dim": 16,
                   "generator_hidden": (32,), "critic_hidden": (32,), "classifier_hidden": (16,),
                   "classifier_epochs": 1.0, "classifier_batch_size": 32, "max_modes": 3}

    def __init__(
        self,
        *,
        numeric: str = "mode_specific",
        max_modes: int = 10,
        noise_dim: int = 128,
        generator_hidden: tuple[int, ...] = (256, 256),
        critic_hidden: tuple[int, ...] | None = None,
        classifier_hidden: tuple[int, ...] | None = None,
        n_shards: int = 100,
        generator_steps: int = 2000,
        batch_size: int = 64,
        pac: int = 1,
        critic_iters: int = 5,
        critic_learning_rate: float = 0.0002,
        generator_learning_rate: float = 0.0002,
        generator_max_grad_norm: float = 1.0,
        gp_weight: float = 10.0,
        gumbel_tau: float = 0.2,
        classifier_share: float = 0.15,
        classifier_epochs: float = 8.0,
        classifier_batch_size: int | None = None,
        classifier_max_steps: int = MAX_STEPS["classifier"],
        classifier_learning_rate: float = 0.005,
        classifier_max_grad_norm: float = 1.0,
        classifier_weight: float = 1.0,
        log_frequency: bool = False,
        match_marginals: bool = True,
        backend: str = "numpy",
    ):
        self._keep(locals())

    def _check_params(self) -> None:
        super()._check_params()
        if isinstance(self.pac, bool) or not isinstance(self.pac, int) or self.pac < 1:
            raise InputError(f"pac must be an integer >= 1. Found {self.pac!r}.")
        if self.batch_size % self.pac:
            raise InputError(f"batch_size must be a multiple of pac (PacGAN packs). Found {self.batch_size} and "
                             f"pac {self.pac}.")

    def _train(self, x, *, rng: np.random.Generator, progress: bool) -> None:
        from dpsynth.privacy.calibration import calibrate_noise
        from dpsynth.privacy.sanitizer import GradientSanitizer, SanitizerConfig

        ledger = self.ledger_
        conditions = Conditions(self.transformer_)
        class_span = target_span(self.transformer_, self.schema_.target)
        use_classifier = class_span is not None and self.classifier_share > 0
        seed = int(rng.integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        data_dim = x.shape[1]
        critic_hidden, classifier_hidden = self._widths(data_dim)
        # shards exist for privacy amplification only: without DP they would just starve each discriminator of
        # rows and steps, so the non-private reference (the papers' TGAN / CTAB-GAN+) has one discriminator
        n_shards = 1 if ledger.non_private else int(self.n_shards)
        with torch.random.fork_rng(devices=[]):  # data-independent init, reproducible, no global side effect
            torch.manual_seed(seed + 1)
            self.generator_ = self._new_generator(conditions.dim, data_dim)
            critics = [self._new_critic(data_dim, conditions.dim, critic_hidden, int(self.pac))
                       for _ in range(n_shards)]
            classifier = mlp(data_dim, classifier_hidden, class_span.width) if use_classifier else None
        n_dp = float(self.metadata_.n_rows)
        spent, target = ledger.epsilon(), ledger.target_epsilon
        phases: list = []
        shares = {"classifier": self.classifier_share, "generator": 1.0}
        if use_classifier:
            clf_phase = DPPhase("classifier", ledger=ledger, n_dp=n_dp, epochs=self.classifier_epochs,
                                batch_size=self.classifier_batch_size, largest_batch=LARGEST_BATCH,
                                min_steps=MIN_STEPS["classifier"], max_steps=self.classifier_max_steps,
                                max_grad_norm=self.classifier_max_grad_norm,
                                target_epsilon=target if ledger.non_private
                                else spent + self.classifier_share * (target - spent), accountant="rdp",
                                rtol=CALIBRATION_RTOL)
            train_classifier(classifier, x, class_span, phase=clf_phase, learning_rate=self.classifier_learning_rate,
                             generator=gen, progress=progress, label=self.name)
            phases.append(clf_phase)

        def config(sigma: float) -> SanitizerConfig:
            return SanitizerConfig(max_grad_norm=float(self.generator_max_grad_norm), noise_multiplier=sigma,
                                   batch_size=int(self.batch_size), n_shards=int(self.n_shards))

        if ledger.non_private:
            sigma = 0.0
            sanitizer = _NoSanitizer(self.generator_steps, self.batch_size, n_shards, gen)
        else:
            # calibrated in the step's own multiplier sigma / sqrt(B) (of order 1-10: a short bracket search; each
            # evaluation of the replace-one RDP curve costs about a second)
            root_b = math.sqrt(self.batch_size)
            sigma = root_b * calibrate_noise(target_epsilon=target, delta=ledger.target_delta, sample_rate=1.0,
                                             steps=int(self.generator_steps), accountant="rdp", ledger=ledger,
                                             rtol=CALIBRATION_RTOL, mechanism=lambda m: config(m * root_b).event())
            sanitizer = GradientSanitizer(config(sigma), ledger=ledger, phase="generator",
                                          max_steps=int(self.generator_steps), generator=gen)
        shard = GradientSanitizer.shard_assignment(len(x), n_shards, gen)
        done = train_sanitized_generator(self.generator_, critics, x, shard, conditions=conditions,
                                         spans=self._spans(), sanitizer=sanitizer, params=self.get_params(),
                                         generator=gen, progress=progress, label=self.name, classifier=classifier,
                                         class_span=class_span)
        settings = {"noise_multiplier": sigma, "effective_noise_multiplier": sigma / math.sqrt(self.batch_size),
                    "max_grad_norm": float(self.generator_max_grad_norm), "batch_size": int(self.batch_size),
                    "n_shards": n_shards, "sample_rate": 1.0 / n_shards,
                    "steps": int(self.generator_steps), **done, "epsilon_after": json_number(ledger.epsilon())}
        phases.append(("generator", settings))
        self.budget_ = budget_summary(ledger, n_dp=n_dp, metadata_epsilon=spent, phases=phases, shares=shares)
        self._fit_category_weights(gen)


class _NoSanitizer:
    """The non-private mode's stand-in for the sanitizer (epsilon = inf): shard draws, no clipping, no noise."""

    def __init__(self, steps: int, batch_size: int, n_shards: int, generator: torch.Generator):
        self.max_steps, self.batch_size, self.n_shards, self.generator = steps, batch_size, n_shards, generator

    def steps(self):
        for _ in range(self.max_steps):
            yield int(torch.randint(self.n_shards, (1,), generator=self.generator))

    def attach(self, tensor: torch.Tensor) -> None:
        return None


def layer_sizes(value: Any) -> Any:
    """Layer sizes as a tuple (a list from JSON or the CLI is accepted); anything else is left for check_params."""
    return tuple(value) if isinstance(value, (list, tuple)) else value
