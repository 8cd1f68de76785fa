"""CTGAN-style condition vectors drawn from DP frequencies (seed 002 DTGAN; DESIGN.md §1 rule 2).

A condition picks one discrete span (a categorical column's one-hot, optionally a numeric column's mode
span as in CTAB-GAN+) uniformly at random, then one slot of it with probability proportional to its DP
count (or to ``log(count + 1)`` — CTGAN's "training-by-sampling" — when ``log_frequency``). The condition
vector concatenates the one-hot of every discrete span, all zero except the chosen slot.

Guarantees: slot counts come from :meth:`TableTransformer.slot_counts`, i.e. from the DP histograms (or
schema-only uniform proxies), never from private rows, so drawing conditions is post-processing. Picking the
real rows that match a condition is *not*: that is the model's job, and it must be accounted for.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpsynth.data.transformers.base import Span, as_rng
from dpsynth.data.transformers.table import TableTransformer
from dpsynth.errors import InputError

__all__ = ["ConditionSampler", "ConditionBatch"]


class ConditionBatch(NamedTuple):
    """``vectors`` (n, cond_dim) float32 one-hots; ``mask`` (n, n_spans) float32 one-hot of the chosen span;
    ``span`` (n,) index into ``ConditionSampler.spans``; ``slot`` (n,) slot within that span;
    ``output_index`` (n,) the matching column of the transformer's output (``span.start + slot``)."""

    vectors: np.ndarray
    mask: np.ndarray
    span: np.ndarray
    slot: np.ndarray
    output_index: np.ndarray


class ConditionSampler:
    """Draws condition vectors from DP slot frequencies; see the module docstring."""

    def __init__(self, transformer: TableTransformer, *, include_modes: bool = False, log_frequency: bool = True):
        info = transformer.output_info
        counts = transformer.slot_counts()
        roles = ("category", "mode") if include_modes else ("category",)
        chosen = [i for i, s in enumerate(info) if s.activation == "softmax" and s.role in roles and s.width > 1]
        self.spans: list[Span] = [info[i] for i in chosen]
        self.log_frequency = bool(log_frequency)
        self._counts = [np.asarray(counts.get(i, np.ones(info[i].width)), dtype=float) for i in chosen]
        widths = np.array([s.width for s in self.spans], dtype=np.intp)
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.intp)
        self.cond_dim = int(self.offsets[-1])
        width = int(widths.max()) if len(widths) else 0
        self._cdf = {use_log: self._build_cdf(use_log, width) for use_log in (True, False)}

    @property
    def n_spans(self) -> int:
        return len(self.spans)

    def probabilities(self, *, log_frequency: bool | None = None) -> list[np.ndarray]:
        """Slot probabilities per span (``log(count + 1)`` weighting when ``log_frequency``)."""
        use_log = self.log_frequency if log_frequency is None else log_frequency
        out = []
        for c in self._counts:
            c = np.clip(np.where(np.isfinite(c), c, 0.0), 0.0, None)
            w = np.log1p(c) if use_log else c
            out.append(w / w.sum() if w.sum() > 0 else np.full(len(w), 1.0 / len(w)))
        return out

    def _build_cdf(self, use_log: bool, width: int) -> np.ndarray:
        cdf = np.ones((len(self.spans), width))
        for i, p in enumerate(self.probabilities(log_frequency=use_log)):
            cdf[i, : len(p)] = np.cumsum(p)
        return cdf

    def sample(
        self, n: int, *, rng: np.random.Generator | int | None = None, log_frequency: bool | None = None
    ) -> ConditionBatch:
        """``n`` conditions: span uniform, slot by (log-)frequency (default: the sampler's ``log_frequency``)."""
        if self.n_spans == 0:
            raise InputError("No discrete span to condition on: the schema has no categorical column.")
        rng = as_rng(rng)
        span = rng.integers(self.n_spans, size=n)
        u = rng.random(n)[:, None]
        use_log = self.log_frequency if log_frequency is None else bool(log_frequency)
        slot = (self._cdf[use_log][span] < u).sum(axis=1)
        widths = np.array([s.width for s in self.spans])[span]
        slot = np.minimum(slot, widths - 1)
        vectors = np.zeros((n, self.cond_dim), dtype=np.float32)
        vectors[np.arange(n), self.offsets[span] + slot] = 1.0
        mask = np.zeros((n, self.n_spans), dtype=np.float32)
        mask[np.arange(n), span] = 1.0
        starts = np.array([s.start for s in self.spans])[span]
        return ConditionBatch(vectors, mask, span, slot, starts + slot)

    def sample_original(self, n: int, *, rng: np.random.Generator | int | None = None) -> ConditionBatch:
        """As :meth:`sample` with the plain DP frequencies (CTGAN's rule at generation time)."""
        return self.sample(n, rng=rng, log_frequency=False)
