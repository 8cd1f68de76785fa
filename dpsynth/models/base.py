"""The Synthesizer contract every dpsynth model follows (scikit-learn style).

- ``__init__`` stores hyper-parameters only (keyword arguments, no work, no data).
- ``fit(df, *, epsilon, delta, schema=None)`` returns ``self``; learned state ends in ``_``; the privacy
  ledger is ``ledger_``. Without a public schema, the metadata is derived with DP and charged to the
  ledger (``metadata_share`` of the budget); with ``epsilon=inf`` (non-private mode) it is read directly.
- ``sample(n=None, *, seed=None)`` returns a DataFrame with the schema's columns and dtypes; the same seed gives
  the same rows, also after ``save``/``load``. Without ``n`` it draws ``row_count_`` rows: the DP row count of the
  metadata phase. Asking for exactly ``len(private_table)`` rows publishes that number (under add/remove, the exact
  row count is an epsilon = infinity release), so the default never does.
- ``save(path)`` writes one safetensors file: tensors as tensors, everything else (schema, encoder state,
  hyper-parameters, ledger, versions) as JSON in the file's metadata header. ``load`` never unpickles:
  loading a model file cannot execute code (DESIGN.md §1 rule 6).
- A model with a ``match_marginals=True`` hyper-parameter gets its numeric marginals mapped, rank-preserving, onto
  its DP histograms after sampling (:mod:`dpsynth.models.marginal_map`; post-processing, no ledger event).

Subclasses implement ``_fit``, ``_sample``, ``_get_state`` and ``_set_state``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch

from dpsynth.data.frame import check_frame, conform
from dpsynth.data.metadata import DPMetadata
from dpsynth.data.schema import Schema
from dpsynth.errors import DPSynthError, InputError, ModelFileError, NotFittedError, SchemaError
from dpsynth.models._file import FORMAT_VERSION, META_KEY, content_digest, read_model_file
from dpsynth.privacy.budget import DEFAULT_METADATA_SHARE, PrivacyBudget, as_budget
from dpsynth.privacy.ledger import PrivacyLedger, warn_large_delta
from dpsynth.privacy.secure_noise import check_noise, use_noise

__all__ = ["Synthesizer", "FORMAT_VERSION", "SAMPLE_CHUNK_ROWS", "check_seed", "read_model_file"]

#: rows drawn from a trained model to estimate its own marginals for ``match_marginals`` (no private rows)
MARGINAL_REFERENCE_ROWS = 50_000
#: rows per chunk of :meth:`Synthesizer.sample_chunks` (memory is bounded by one chunk, not by n)
SAMPLE_CHUNK_ROWS = 200_000


def with_target(schema: Schema | None, target: object) -> Schema | None:
    """``schema`` with the declared ``target`` filled in (``fit(..., target=...)``); None stays None (DP discovery
    takes the target itself). A target that differs from the schema's own is refused: which one is meant?"""
    if target is None:
        return schema
    if not isinstance(target, str) or not target:
        raise InputError(f"target must be a column name. Found {target!r}.")
    if schema is None or schema.target == target:
        return schema
    if schema.target is not None:
        raise InputError(f"target {target!r} differs from the schema's target {schema.target!r}; give one of them.")
    return dataclasses.replace(schema, target=target)  # the schema checks that it names one of its columns


def check_seed(seed: object) -> None:
    """A seed is None (fresh operating-system entropy) or a non-negative integer (one InputError line)."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer or None. Found {seed!r}.")


class Synthesizer(ABC):
    """Base class of all dpsynth generators. See the module docstring for the contract."""

    #: registry name, e.g. ``"marginals"``; set by subclasses
    name: ClassVar[str] = ""
    #: True if the model can run with a finite epsilon (False for purely non-private baselines)
    supports_dp: ClassVar[bool] = True
    #: the ledger phases a fit of this model may record (``info`` flags events of any other phase)
    phases: ClassVar[tuple[str, ...]] = ()
    #: the metadata phase's share of epsilon when the fit's budget leaves it to the model (``metadata_share=None``);
    #: a public constant per model, chosen by measurement (README, "Budget splits")
    default_metadata_share: ClassVar[float] = DEFAULT_METADATA_SHARE
    #: whether ``fit`` also takes a file path or a Spark DataFrame, counted by an SQL engine (never loaded)
    reads_tables: ClassVar[bool] = False
    #: whether ``fit(..., noise="secure")`` covers every mechanism of the model (:mod:`dpsynth.privacy.secure_noise`:
    #: OpenDP for count queries and selections, the cryptographic generator for DP-SGD, the sanitizer, PATE and
    #: DP-EM): true of every mechanism in :mod:`dpsynth.privacy`; a model that draws DP noise of its own sets False
    secure_noise: ClassVar[bool] = True
    #: hyper-parameters small enough for the contract suite and smoke tests (seconds on Adult slices)
    fast_params: ClassVar[dict[str, Any]] = {}
    #: old hyper-parameter name -> new name (None: a training-only setting that no longer exists), so that model
    #: files written before a rename still load
    renamed_params: ClassVar[dict[str, str | None]] = {}

    # ------------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind == p.KEYWORD_ONLY]

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        """Every hyper-parameter with its default, in the constructor's order (what ``dpsynth info --model NAME``
        prints)."""
        sig = inspect.signature(cls.__init__).parameters
        return {name: sig[name].default for name in cls._param_names()}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The hyper-parameters, by name (scikit-learn's contract, so ``sklearn.base.clone(model)`` works).
        ``deep`` is accepted for scikit-learn; no dpsynth hyper-parameter is itself an estimator."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Synthesizer:
        """Set hyper-parameters by name and validate them (:meth:`check_params`) before returning ``self``. An
        unknown name or an invalid value raises :class:`InputError` and leaves the model as it was. Fitted state
        is kept until the next ``fit``, as in scikit-learn."""
        names = self._param_names()
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise InputError(f"{type(self).__name__} has no hyper-parameter {', '.join(unknown)}. "
                             f"Valid: {', '.join(names)}.")
        before = self.get_params()
        for name, value in params.items():
            setattr(self, name, tuple(value) if isinstance(before[name], tuple) and isinstance(value, list)
                    else value)
        try:
            self.check_params()
        except InputError:
            for name, value in before.items():
                setattr(self, name, value)
            raise
        return self

    #: number (float or integer) hyper-parameters for which 0 is meaningful (all others must be > 0 / >= 1)
    zero_allowed: ClassVar[tuple[str, ...]] = ()

    def check_params(self) -> None:
        """Type- and range-check every hyper-parameter against its default, before any work (one InputError line
        naming it): booleans stay booleans, integers are integers >= 1 (``None`` defaults: ``None`` for the automatic
        choice or an integer >= 1), floats finite numbers > 0 (or >= 0 when
        listed in ``zero_allowed``), text stays text, tuples are tuples of integers >= 1; then the model's own
        ``_check_params`` (choices, relations between parameters), if it has one."""
        for name, default in self.default_params().items():
            value = getattr(self, name)
            _check_param(name, value, default, zero_ok=name in self.zero_allowed)
        check = getattr(self, "_check_params", None)
        if check is not None:
            check()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    @classmethod
    def check_noise(cls, noise: str, *, non_private: bool = False) -> None:
        """One-line error unless ``noise`` is a noise mode this model can fit with (``"secure"``: the models with
        ``secure_noise``; any model in the non-private mode, which draws no noise)."""
        check_noise(noise)
        if noise == "secure" and not cls.secure_noise and not non_private:
            from dpsynth.models import secure_noise_models

            raise InputError(f"noise='secure' covers the models whose every mechanism is one of dpsynth.privacy's "
                             f"({', '.join(secure_noise_models())}). Found model '{cls.name}', which draws noise of "
                             "its own.")

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        data: pd.DataFrame | str | os.PathLike,
        budget: PrivacyBudget | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        metadata_share: float | None = None,
        schema: Schema | None = None,
        seed: int | None = None,
        progress: bool = False,
        dtypes: str = "public",
        target: str | None = None,
        noise: str = "numpy",
    ) -> Synthesizer:
        """Fit on private ``data`` within a privacy budget; see the module docstring.

        ``data`` is a pandas DataFrame; models with ``reads_tables`` (every DP model, with ``backend="duckdb"`` or
        ``"spark"``) also take a Parquet / CSV path or a Spark DataFrame, counted by the engine without loading the
        rows (:mod:`dpsynth.marginals.tables`; the deep models encode the rows onto disk in chunks and read each
        step's sample from there); without a public ``schema``,
        DP discovery runs in the engine: from the column types of a Parquet file or a Spark DataFrame, and on a CSV
        file (which has no types) with private dtypes, as ``dpsynth fit FILE.csv`` reads it with pandas.

        The budget is a :class:`~dpsynth.privacy.budget.PrivacyBudget` (``fit(df, PrivacyBudget(1.0, 1e-5))``) or
        its fields as keywords (``fit(df, epsilon=1.0, delta=1e-5, metadata_share=0.1)``), not both.

        ``seed`` makes the fit reproducible — and so makes the DP noise predictable to whoever knows it (and the
        code): the guarantee holds only if the seed stays secret. Leave it ``None`` for a release (fresh entropy
        from the operating system). The model file records whether a seed was given, never the seed itself.

        ``dtypes`` says what the frame's dtypes are, when no schema is given: ``"public"`` (default) - chosen by
        whoever built the frame (or wrote the Parquet file), so column kinds and nullability follow them;
        ``"private"`` - inferred from the values (as ``pd.read_csv`` does), hence not public: every value is read
        as text and kinds, nullability and dtypes are decided with DP (:mod:`dpsynth.data.text`). ``dpsynth fit
        FILE.csv`` without a schema uses ``"private"``.

        ``target``: the column the synthetic data is to predict (public: the analyst's choice, like a schema's
        ``target``, which it fills in). Without a schema, DP discovery releases a text target first and, when a
        class is missing, again from a reserve of as much budget as the other columns' histograms, so its rarer
        classes clear the release threshold; a reserve not needed goes to the other columns
        (:func:`~dpsynth.data.discovery.release_stage_two`), and target-aware models (``batch-aim``; ``aim`` with
        ``target="auto"``) build their workload around it.
        """
        from dpsynth.data.text import DTYPE_MODES, as_text
        from dpsynth.marginals.tables import is_table_source

        in_engine = is_table_source(data)  # a file path or a Spark DataFrame: counted where it lives
        if dtypes == "private" and isinstance(data, pd.DataFrame):
            data = as_text(data)  # every cell as text first (a mixed-type object column is then just text)
        if not in_engine:
            check_frame(data)
        # validated as a whole; never against len(data): its messages would print the exact n
        budget = as_budget(budget, epsilon=epsilon, delta=delta, metadata_share=metadata_share)
        epsilon, delta, metadata_share = budget.epsilon, budget.delta, budget.metadata_share
        if metadata_share is None:
            metadata_share = self.default_metadata_share
        check_seed(seed)
        self.check_params()  # before the metadata phase: a typo must not cost budget
        if not self.supports_dp and not budget.non_private:
            raise InputError(f"Model '{self.name}' is a non-private baseline: use epsilon=inf.")
        if dtypes not in DTYPE_MODES:
            raise InputError(f"dtypes must be one of {', '.join(DTYPE_MODES)}. Found {dtypes!r}.")
        self.check_noise(noise, non_private=budget.non_private)
        schema = with_target(schema, target)
        if schema is not None and schema.provenance == "inferred" and not math.isinf(float(epsilon)):
            # an inferred schema holds exact min/max and every category of the rows: used unreviewed in a DP fit,
            # it would put non-DP facts about the rows into the model file (DESIGN.md §1 rule 2)
            raise SchemaError(
                "this schema was inferred from the private rows (provenance 'inferred'): review it (round the "
                "bounds, drop rare categories), then set \"provenance\": \"public\" (or call schema.reviewed()). "
                "Without a schema, fit discovers the metadata with DP. Found provenance 'inferred'."
            )
        if in_engine and not self.reads_tables:
            from dpsynth.models import available_models, get_model_class

            readers = ", ".join(n for n in available_models() if get_model_class(n).reads_tables)
            raise InputError(f"Model '{self.name}' fits a pandas DataFrame: read the table first (e.g. "
                             "pd.read_parquet). A file path or a Spark DataFrame is for the models that read "
                             f"tables where they live ({readers}; with backend='duckdb' or 'spark').")
        # secure noise records its discrete Gaussians as such (DiscreteGaussianDpEvent): composed by PLD and RDP too
        self.ledger_ = PrivacyLedger(target_epsilon=float(epsilon), target_delta=float(delta), accountant="best")
        self.fit_info_ = {"metadata_share": float(metadata_share), "seeded": seed is not None,
                          "public_schema": schema is not None, "dtypes": dtypes, "noise": noise}
        with use_noise(noise):
            return self._fit_with(data, schema, metadata_share, in_engine=in_engine, seed=seed, progress=progress,
                                  dtypes=dtypes, target=target, delta=float(delta))

    def _fit_with(self, data, schema: Schema | None, metadata_share: float, *, in_engine: bool, seed: int | None,
                  progress: bool, dtypes: str, target: str | None, delta: float) -> Synthesizer:
        """The metadata phase and the model's own fit, after ``fit``'s checks (inside its noise context)."""
        from dpsynth.data.discovery import prepare_private_text, resolve_schema

        rng = np.random.default_rng(seed)
        if in_engine:
            self._fit_in_engine(data, schema, metadata_share, rng=rng, progress=progress, dtypes=dtypes,
                                target=target)
            self._fit_marginal_map(rng)
            self._fitted = True
            return self
        # metadata: public schema or DP discovery, plus DP row count and histograms (phase "metadata")
        self.schema_, self.metadata_ = resolve_schema(
            data, schema, ledger=self.ledger_, share=metadata_share, rng=rng, progress=progress, dtypes=dtypes,
            target=target,
        )
        if dtypes == "private":
            data = prepare_private_text(data, self.schema_)
        if not self.ledger_.non_private:
            warn_large_delta(float(delta), self.metadata_.n_rows)  # against the DP row count
        frame = conform(data, self.schema_, exact=self.ledger_.non_private)
        self._fit(frame, rng=rng, progress=progress)
        del frame
        self._fit_marginal_map(rng)
        self._fitted = True
        return self

    def _fit_marginal_map(self, rng: np.random.Generator) -> None:
        """With ``match_marginals``: the marginal map of :mod:`dpsynth.models.marginal_map` (post-processing: samples
        of the trained model and the DP histograms); else none."""
        self.marginal_map_ = None
        if getattr(self, "match_marginals", False):
            from dpsynth.models.marginal_map import MarginalMap

            reference = self._sample(MARGINAL_REFERENCE_ROWS, rng=np.random.default_rng(rng.integers(2**63)))
            self.marginal_map_ = MarginalMap.fit(reference, self.schema_, self.metadata_)

    def _fit_in_engine(self, source, schema: Schema, share: float, *, rng: np.random.Generator,
                       progress: bool, dtypes: str, target: str | None = None) -> None:
        """Fit on a table an SQL engine holds (:mod:`dpsynth.marginals.tables`): the metadata phase (the public
        schema's histograms, or DP discovery without one) from the engine's exact counts, released by the same code
        (and the same draws of ``rng``) as the pandas path, then :meth:`_fit_table`.

        Without a schema, a CSV file (text: it has no column types) is discovered with private dtypes whatever
        ``dtypes`` says, and its numeric columns are then read by the number rule (text tokens missing), as
        ``prepare_private_text`` reads them in pandas; ``dtypes="private"`` on a typed table is refused before any
        query."""
        from dpsynth.data.discovery import discover, public_schema_release
        from dpsynth.data.discovery_text import discover_private_dtypes
        from dpsynth.marginals.tables import (
            SQLColumns,
            SQLTextColumns,
            count_metadata_cells,
            numeric_cell_counter,
            open_table,
        )

        table = open_table(source, getattr(self, "backend", ""))
        try:
            if schema is None and (table.text_csv or dtypes == "private"):
                self.schema_, self.metadata_ = discover_private_dtypes(SQLTextColumns(table), self.ledger_, share,
                                                                       rng, target=target)
                table.parse_numbers([c.name for c in self.schema_.columns if c.is_numeric])
                self.fit_info_["dtypes"] = "private"
            elif schema is None:  # DP discovery from the engine's column types and SQL counts
                self.schema_, self.metadata_ = discover(SQLColumns(table), self.ledger_, share, rng, target=target)
            else:
                n_rows, cells = count_metadata_cells(table, schema)
                self.schema_ = schema
                self.metadata_ = public_schema_release(n_rows, cells, schema, self.ledger_, share, rng,
                                                      count_cells=numeric_cell_counter(table))
            if not self.ledger_.non_private:
                warn_large_delta(float(self.ledger_.target_delta), self.metadata_.n_rows)
            self._fit_table(table, rng=rng, progress=progress)
        finally:
            close = getattr(table, "close", None)
            if close is not None:
                close()

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit on an engine-held table (models with ``reads_tables``)."""
        raise NotImplementedError

    @abstractmethod
    def _fit(self, frame: pd.DataFrame, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit on ``frame`` (already conformed to ``self.schema_``), recording every access in ``self.ledger_``."""

    # ------------------------------------------------------------------ sample
    def sample(self, n: int | None = None, *, seed: int | None = None) -> pd.DataFrame:
        """Draw ``n`` synthetic rows (default: :attr:`row_count_`, the DP row count); post-processing only (never
        reads private rows). Passing the exact private row count would publish it: leave ``n`` out for a release.

        The rows are those of :meth:`sample_chunks` concatenated: the same seed gives the same rows either way."""
        chunks = list(self.sample_chunks(n, seed=seed))
        return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)

    def sample_chunks(self, n: int | None = None, *, seed: int | None = None,
                      chunk_rows: int = SAMPLE_CHUNK_ROWS) -> Iterator[pd.DataFrame]:
        """Yield the rows of :meth:`sample` in chunks of at most ``chunk_rows`` (bounded memory at any ``n``; the
        CLI streams them to disk). Chunk ``i`` draws from the ``i``-th child of ``SeedSequence(seed)``, so the rows
        depend on the seed and on ``chunk_rows`` only, not on how they are consumed."""
        self._check_fitted()
        if n is None:
            n = self.row_count_
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"n must be a non-negative integer. Found {n!r}.")
        check_seed(seed)
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
            raise InputError(f"chunk_rows must be a positive integer. Found {chunk_rows!r}.")
        from dpsynth.data.frame import restore_dtypes

        root = np.random.SeedSequence(seed)
        n, done = int(n), 0
        while True:
            rows = min(int(chunk_rows), n - done)
            rng = np.random.default_rng(root.spawn(1)[0])
            frame = self._sample(rows, rng=rng)
            if getattr(self, "marginal_map_", None) is not None:
                frame = self.marginal_map_.apply(frame, rng)
            yield restore_dtypes(frame, self.schema_)
            done += rows
            if done >= n:
                return

    @abstractmethod
    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        """Return ``n`` rows with the schema's columns (dtypes are restored by the caller)."""

    # ------------------------------------------------------------------ persistence
    @abstractmethod
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """(tensors, JSON-able state) that fully describe the fitted model (no training rows)."""

    @abstractmethod
    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        """Inverse of :meth:`_get_state` on an instance built with the saved hyper-parameters."""

    def save(self, path: str | os.PathLike) -> Path:
        """Write the fitted model to one safetensors file (atomically)."""
        from safetensors.torch import save_file

        from dpsynth import __version__
        from dpsynth._io import atomic_write

        self._check_fitted()
        tensors, state = self._get_state()
        header = {
            "format_version": FORMAT_VERSION,
            "dpsynth_version": __version__,
            "torch_version": torch.__version__,
            "model": self.name,
            "params": self.get_params(),
            "schema": self.schema_.to_dict(),
            "ledger": self.ledger_.to_dict(),
            "metadata": self.metadata_.to_dict(),
            "state": state,
            "marginal_map": None if getattr(self, "marginal_map_", None) is None else self.marginal_map_.to_dict(),
            "fit": getattr(self, "fit_info_", {}),
        }
        tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
        header = json.loads(json.dumps(header, allow_nan=False, default=_json_default))  # plain JSON types
        header["digest"] = content_digest(header, tensors)  # detects corruption on load (not a signature)
        text = json.dumps(header, allow_nan=False)
        return atomic_write(path, lambda p: save_file(tensors, str(p), metadata={META_KEY: text}))

    @classmethod
    def load(cls, path: str | os.PathLike) -> Synthesizer:
        """Load a model file written by :meth:`save` (no code is executed from the file)."""
        from dpsynth.models import get_model_class

        tensors, header = read_model_file(path)
        try:
            model_cls = get_model_class(header["model"]) if cls is Synthesizer else cls
        except InputError as exc:
            raise ModelFileError(f"{path}: {exc}") from exc
        if model_cls.name != header["model"]:
            raise ModelFileError(f"{path} holds a '{header['model']}' model, not '{model_cls.name}'.")
        try:
            model = cls._from_header(model_cls, tensors, header)
            model.sample(2, seed=0)  # the pieces fit together (shapes, histograms, schema): else a bad file
        except ModelFileError:
            raise
        except (DPSynthError, KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as exc:
            reason = " ".join(str(exc).split())[:300]
            raise ModelFileError(f"{path}: malformed model file ({type(exc).__name__}: {reason}).") from exc
        return model

    @staticmethod
    def _from_header(model_cls, tensors, header) -> Synthesizer:
        params = {}
        for name, value in header["params"].items():  # files written before a rename keep loading
            new = model_cls.renamed_params.get(name, name)
            if new is not None:
                params[new] = value
        header = {**header, "params": params}
        unknown = set(header["params"]) - set(model_cls._param_names())
        if unknown:
            raise ModelFileError(f"unknown hyper-parameters {sorted(unknown)} for a '{model_cls.name}' model.")
        model = model_cls(**header["params"])
        model.check_params()
        model.schema_ = Schema.from_dict(header["schema"])
        model.ledger_ = PrivacyLedger.from_dict(header["ledger"])
        model.metadata_ = DPMetadata.from_dict(header["metadata"])
        model._set_state(tensors, header["state"])
        model.fit_info_ = dict(header.get("fit") or {})
        model.marginal_map_ = None
        if header.get("marginal_map") is not None:
            from dpsynth.models.marginal_map import MarginalMap

            model.marginal_map_ = MarginalMap.from_dict(header["marginal_map"])
        model._fitted = True
        return model

    # ------------------------------------------------------------------ helpers
    def _check_fitted(self) -> None:
        if not getattr(self, "_fitted", False):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet: call fit() first.")

    @property
    def row_count_(self) -> int:
        """The row count the model may publish: the DP (noisy) count of the metadata phase (its row-count query pooled
        with its histograms' row totals), rounded; the exact count only in the non-private mode. The default size of
        :meth:`sample`."""
        self._check_fitted()
        return max(1, int(round(float(self.metadata_.n_rows))))

    def _row_count_sd(self) -> float:
        """The noise sd of the metadata's DP row count: recorded with it, or in files written before it was (whose
        count is the row-count query alone) that query's sigma in the ledger; 0 in the non-private mode."""
        if self.metadata_.non_private:
            return 0.0
        if self.metadata_.n_rows_sd is not None:
            return float(self.metadata_.n_rows_sd)
        return next((float(e.params["sigma"]) for e in self.ledger_.entries
                     if e.phase == "metadata" and e.mechanism == "row count"), float(self.metadata_.sigma))

    @property
    def epsilon_(self) -> float:
        self._check_fitted()
        return self.ledger_.epsilon()


def _check_param(name: str, value: Any, default: Any, *, zero_ok: bool) -> None:
    def bad(rule: str) -> InputError:
        return InputError(f"hyper-parameter {name} must be {rule}. Found {value!r}.")

    if default is None:  # an automatic size (a batch size or width that follows the table): None, an integer >= 1
        if isinstance(value, (tuple, list)):  # or layer sizes, where the model has several layers
            if not value or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in value):
                raise bad("a non-empty list of integers >= 1")
        elif value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))
                                    or value < int(not zero_ok)):
            raise bad(f"an integer >= {int(not zero_ok)} (or a list of them for layers), or null for the automatic "
                      f"choice")
    elif isinstance(default, bool):
        if not isinstance(value, (bool, np.bool_)):
            raise bad("true or false")
    elif isinstance(default, int):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < int(not zero_ok):
            raise bad("an integer >= 0" if zero_ok else "an integer >= 1")
    elif isinstance(default, float):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise bad("a number")
        if not math.isfinite(float(value)) or value < 0 or (value == 0 and not zero_ok):
            raise bad("a finite number >= 0" if zero_ok else "a finite number > 0")
    elif isinstance(default, str):
        if not isinstance(value, str):
            raise bad("text")
    elif isinstance(default, tuple):
        if (not isinstance(value, (tuple, list)) or not value
                or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in value)):
            raise bad("a non-empty list of integers >= 1")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
