"""What the baselines whose generator writes encoded rows directly share (``pate-gan``, ``dp-wgan``, ``dp-gan``):
the encoding, the generator, sampling and the model file. Training - where the privacy is - stays in each model.

- the :class:`~dpsynth.data.transformers.TableTransformer` is fitted on the public schema or the DP metadata
  (on the rows only in the non-private mode);
- the generator is CTGAN's residual one without conditions
  (:class:`~dpsynth.models.networks.ctgan.UnconditionalGenerator`): measured on an Adult slice (non-private, PATE-GAN),
  a plain MLP generator collapses every category to one value within 300 iterations; this one keeps the marginals;
- sampling is post-processing: generated rows (numbers through tanh, categories as probabilities), the optional
  marginal map's category weights (DP slot counts), then the transformer's inverse drawing each category;
- the model file holds the generator, the transformer state, ``budget_`` and the category weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from dpsynth.data.row_store import check_row_backend, encode_table
from dpsynth.models.base import MARGINAL_REFERENCE_ROWS, Synthesizer
from dpsynth.models.marginal_map import CategoryWeights
from dpsynth.models.networks.autoencoder import activate
from dpsynth.models.networks.ctgan import UnconditionalGenerator

__all__ = ["RowGeneratorModel"]

_SAMPLE_CHUNK = 131_072


class RowGeneratorModel(Synthesizer):
    """Base of the row-writing generators (module docstring); subclasses set ``noise_dim``, ``generator_hidden``,
    ``numeric``, ``match_marginals`` and ``backend`` and implement ``_fit``, which reads its rows only through
    :meth:`_encode` and then as ``x[positions]``, ``len(x)`` and ``x.shape``: a fit from a file
    (``backend="duckdb"`` / ``"spark"``) hands ``_fit`` the engine's table, whose rows :meth:`_encode` writes onto
    disk (:mod:`dpsynth.data.row_store`), and every step reads its sample from there."""

    reads_tables = True  # fit(path, backend="duckdb"): rows encoded onto disk, read by position

    def check_params(self) -> None:
        super().check_params()
        check_row_backend(self)

    def _fit_table(self, table, *, rng: np.random.Generator, progress: bool) -> None:
        """Fit from a file (or a Spark DataFrame): :meth:`_fit` on the engine's table; the rows on disk are removed
        when the fit ends, whatever way it ends."""
        self._rows_on_disk = None
        try:
            self._fit(table, rng=rng, progress=progress)
        finally:
            rows, self._rows_on_disk = self._rows_on_disk, None
            del self._rows_on_disk
            if rows is not None:
                rows.close()

    def _encode(self, data, rng: np.random.Generator):
        """Fit the transformer and return the encoded rows: of a frame, as a tensor (the transformer fitted on the DP
        metadata, or on the rows when non-private); of an engine's table, written onto disk chunk by chunk
        (:func:`dpsynth.data.row_store.encode_table`; the transformer fitted on the metadata, exact counts in the
        non-private mode) and indexed like a tensor."""
        from dpsynth.data.transformers import TableTransformer

        self.transformer_ = TableTransformer(self.schema_, numeric=self.numeric, categorical="onehot")
        if not isinstance(data, pd.DataFrame):
            self.transformer_.fit(self.metadata_, rng=rng)
            self._rows_on_disk = encode_table(data, self.schema_, self.transformer_, rng=rng,
                                              exact=self.ledger_.non_private)
            return self._rows_on_disk
        if self.ledger_.non_private:
            self.transformer_.fit_exact(data, non_private=True, rng=rng)
        else:
            self.transformer_.fit(self.metadata_, rng=rng)
        return torch.as_tensor(np.ascontiguousarray(self.transformer_.transform(data, rng=rng)), dtype=torch.float32)

    def _spans(self) -> list[tuple[int, int, str]]:
        return [(int(s.start), int(s.end), str(s.activation)) for s in self.transformer_.output_info]

    def _build_generator(self, data_dim: int) -> None:
        self.generator_ = UnconditionalGenerator(self.noise_dim, self.generator_hidden, data_dim)

    def _fit_category_weights(self, gen: torch.Generator) -> None:
        """After training: the marginal map's category weights when ``match_marginals`` (post-processing of the
        trained generator and the DP slot counts), else None."""
        self.generator_.eval()
        self.category_weights_ = None
        if self.match_marginals:
            self.category_weights_ = CategoryWeights.fit(self._rows(MARGINAL_REFERENCE_ROWS, gen), self.transformer_,
                                                         mode="probs", sigma=self.metadata_.sigmas())

    # ------------------------------------------------------------------ sample
    @torch.no_grad()
    def _rows(self, n: int, gen: torch.Generator) -> np.ndarray:
        """Generated encoded rows: numbers through tanh, categories as probabilities (drawn from on decoding)."""
        return activate(self.generator_(torch.randn(n, self.noise_dim, generator=gen)), self._spans()).numpy()

    def _sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        parts = []
        for start in range(0, n, _SAMPLE_CHUNK):
            rows = self._rows(min(_SAMPLE_CHUNK, n - start), gen)
            if self.category_weights_ is not None:
                rows = self.category_weights_.apply(rows)
            parts.append(self.transformer_.inverse_transform(rows, rng=rng, softmax="probs"))
        if not parts:
            return self.transformer_.inverse_transform(np.zeros((0, self.transformer_.output_dim), np.float32))
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]

    # ------------------------------------------------------------------ persistence
    def _get_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {f"generator.{k}": v for k, v in self.generator_.state_dict().items()}
        state = {"transformer": self.transformer_.to_dict(), "budget": self.budget_,
                 "category_weights": None if self.category_weights_ is None else self.category_weights_.to_dict()}
        return tensors, state

    def _set_state(self, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        from dpsynth.data.transformers import TableTransformer

        self.transformer_ = TableTransformer.from_dict(state["transformer"])
        self._build_generator(int(self.transformer_.output_dim))
        self.generator_.load_state_dict({k[len("generator."):]: v for k, v in tensors.items()}, strict=True)
        self.generator_.eval()
        self.budget_ = state["budget"]
        weights = state.get("category_weights")
        self.category_weights_ = None if weights is None else CategoryWeights.from_dict(weights)


def as_layers(value: Any) -> Any:
    """Layer sizes as a tuple (a list from JSON or the CLI is accepted); anything else is left for check_params."""
    return tuple(value) if isinstance(value, (list, tuple)) else value
