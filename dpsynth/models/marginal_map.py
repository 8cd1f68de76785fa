"""Rank-preserving calibration of a generator's numeric marginals to the model's DP histograms.

Why: deep DP generators learn the joint structure but their one-way numeric marginals drift (Adult, epsilon = 1:
DP-TLDM's ``age`` and ``hours-per-week`` histograms are ~0.1 in total variation from the real ones, while a DP
histogram from the metadata phase is within ~0.01). The model's DP metadata already holds a noisy histogram of
every numeric column (paid for in phase ``"metadata"``). Each synthetic value ``x`` of such a column is replaced by
``F_dp^{-1}(F_model(x))``: the column then follows the DP histogram, and every row keeps its rank within the
column, so the rank (copula) dependence between columns — what the deep model learned — is unchanged.

Privacy: the map is built from (a) rows sampled from the already-trained DP model and (b) the DP histograms.
Both are outputs of mechanisms recorded in the ledger; neither step reads a private row. It is post-processing
and records no event.

Categorical columns (:class:`CategoryWeights`, used by models that decode categories from per-row scores): each
category's score is scaled by one weight per category (added in log space to logits), fitted on decoded reference
rows so that the model's category frequencies match the DP histogram. Scaling every row's probability of category
``c`` by the same ``w_c`` is the smallest change (in KL) of the model's conditional ``p(c | rest)`` that fixes the
marginal (iterative proportional fitting on one margin), so what a row's other columns say about its category
is kept. Same privacy argument: reference rows from the DP model plus DP histograms.

Details:
- ``F_model`` is estimated once, at the end of ``fit``, from ``n_reference`` sampled rows and kept as
  ``levels`` quantiles (saved in the model file); sampling applies the fixed map to each row on its own, so
  rows stay i.i.d. and a seed reproduces them. Ties (integer columns) get a randomised probability integral
  transform (``u`` uniform over the tied mass), so a spike is spread over the DP histogram's bins exactly.
- ``F_dp`` is piecewise linear over the histogram's bins (uniform within a bin). Bins whose noisy count is below
  2 sigma are treated as empty (clipping the noise at 0 leaves positive mass in every empty bin); on a small table,
  where single bins drown in the noise, adjacent bins are merged first (:func:`coarsened`). Special values (e.g.
  0 of capital-gain) are point masses of ``F_dp`` at their DP counts, so their share follows the DP histogram too
  (a model that drew only zeros in a 0/1 column is spread back over both values); missing values are left as the
  model drew them. (Files written before special values were mapped keep them as drawn: ``specials`` lists them.)
  Integer columns are rounded; everything stays inside the schema's bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpsynth.data.metadata import DPMetadata, NumericHistogram
from dpsynth.data.schema import Schema

__all__ = ["MarginalMap", "CategoryWeights", "coarsened", "category_target"]

_NUMERIC_KINDS = ("continuous", "integer", "mixed", "long_tail")


@dataclass
class _ColumnMap:
    model_quantiles: np.ndarray  # F_model^{-1} at levels (j + 0.5) / K
    edges: np.ndarray  # DP histogram bin edges
    cdf: np.ndarray  # F_dp at the edges (0 ... 1)
    specials: tuple[float, ...]
    rounds: bool
    lower: float
    upper: float

    def apply(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = values.astype(float, copy=True)
        regular = ~np.isnan(out)
        for s in self.specials:
            regular &= out != s
        x = out[regular]
        if x.size == 0:
            return out
        q, k = self.model_quantiles, len(self.model_quantiles)
        left = np.searchsorted(q, x, side="left")
        right = np.searchsorted(q, x, side="right")
        # continuous part: linear interpolation between neighbouring quantiles
        lo = np.clip(left - 1, 0, k - 1)
        hi = np.clip(left, 0, k - 1)
        gap = q[hi] - q[lo]
        frac = np.divide(x - q[lo], gap, out=np.full_like(x, 0.5), where=gap > 0)
        u = (lo + 0.5 + np.clip(frac, 0.0, 1.0)) / k
        u = np.where(left == 0, rng.uniform(0.0, 0.5, x.size) / k, u)
        u = np.where(left == k, 1.0 - rng.uniform(0.0, 0.5, x.size) / k, u)
        # tied part: uniform over the probability mass the model puts on exactly this value
        tied = right > left
        u = np.where(tied, (left + rng.uniform(0.0, 1.0, x.size) * (right - left)) / k, u)
        mapped = np.interp(np.clip(u, 0.0, 1.0), self.cdf, self.edges)
        if self.rounds:
            mapped = np.round(mapped)
        # a mapped regular value must not become a special value (it would change that value's mass)
        for s in self.specials:
            mapped = np.where(mapped == s, x, mapped)
        out[regular] = np.clip(mapped, self.lower, self.upper)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"model_quantiles": self.model_quantiles.tolist(), "edges": self.edges.tolist(),
                "cdf": self.cdf.tolist(), "specials": list(self.specials), "rounds": self.rounds,
                "lower": self.lower, "upper": self.upper}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> _ColumnMap:
        return cls(np.asarray(d["model_quantiles"], dtype=float), np.asarray(d["edges"], dtype=float),
                   np.asarray(d["cdf"], dtype=float), tuple(float(s) for s in d["specials"]), bool(d["rounds"]),
                   float(d["lower"]), float(d["upper"]))


class MarginalMap:
    """Per numeric column: ``x -> F_dp^{-1}(F_model(x))`` (see the module docstring)."""

    def __init__(self, columns: dict[str, _ColumnMap]):
        self.columns = columns

    @classmethod
    def fit(cls, reference: pd.DataFrame, schema: Schema, metadata: DPMetadata, *, levels: int = 2000) -> MarginalMap:
        """Build the map from rows sampled from the trained model (``reference``) and the DP histograms."""
        sigma = float(metadata.sigma or 0.0)
        maps: dict[str, _ColumnMap] = {}
        for col in schema.columns:
            hist = metadata.histograms.get(col.name)
            if col.kind not in _NUMERIC_KINDS or not isinstance(hist, NumericHistogram):
                continue
            if len(hist.edges) < 2:
                continue
            # the DP row count less the missing and special cells: a far less noisy total than the sum of the bins
            total = metadata.n_rows - hist.missing - sum(hist.special_counts.values())
            kept, edges = coarsened(np.asarray(hist.counts, dtype=float), np.asarray(hist.edges, dtype=float),
                                    hist.bin_noise(sigma)[1], total)
            # special values (0 of a mixed column) are point masses of the same CDF, at their DP counts (below 2
            # sigma: empty), so a model that collapsed onto the special value is spread back over the histogram
            specials = {float(v): (float(c) if c >= 2.0 * sigma else 0.0) for v, c in hist.special_counts.items()}
            if kept.sum() + sum(specials.values()) <= 0:
                continue  # the DP histogram says nothing usable: leave the column as the model drew it
            values = pd.to_numeric(reference[col.name], errors="coerce").to_numpy(dtype=float)
            present = values[~np.isnan(values)]
            if present.size < 10:
                continue
            k = min(levels, present.size)
            model_q = np.quantile(present, (np.arange(k) + 0.5) / k, method="inverted_cdf")
            knots, cdf = _knots(edges, kept, specials)
            lower = float(col.lower) if col.lower is not None else float(hist.edges[0])
            upper = float(col.upper) if col.upper is not None else float(hist.edges[-1])
            maps[col.name] = _ColumnMap(model_q, knots, cdf, (), bool(col.rounds), lower, upper)
        return cls(maps)

    def apply(self, frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """Map every calibrated column of ``frame`` (a copy is returned; other columns are untouched)."""
        out = frame.copy()
        for name, cmap in self.columns.items():
            if name in out.columns:
                out[name] = cmap.apply(pd.to_numeric(out[name], errors="coerce").to_numpy(dtype=float), rng)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {name: m.to_dict() for name, m in self.columns.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MarginalMap:
        return cls({name: _ColumnMap.from_dict(m) for name, m in d.items()})


class CategoryWeights:
    """Per categorical softmax span: log-weights on its slots so decoded frequencies match the DP histogram.

    ``mode="probs"``: the span holds probabilities and the decoder draws a slot in proportion to
    ``p * w``; ``mode="logits"``: the span holds logits and the decoder takes ``argmax(logit + log w)``.
    Targets are the transformer's DP slot counts (:meth:`TableTransformer.slot_counts`, denoised by
    :func:`category_target`). A slot the denoised DP counts leave empty gets the log-weight ``-EMPTY_LOG_WEIGHT``
    (the others stay within [-30, 0], so at least a factor e^-20 below any of them): its category is drawn only
    where the model puts (nearly) all of a row's mass on empty slots — the DP histogram says it is absent, so the
    release has (almost) none of it. (A floor of 1e-4 of the span used to give an absent category that share.)
    """

    def __init__(self, spans: dict[int, tuple[int, int]], log_weights: dict[int, np.ndarray], mode: str):
        self.spans, self.log_weights, self.mode = spans, log_weights, mode

    @classmethod
    def fit(cls, reference: np.ndarray, transformer: Any, *, sigma: float | Mapping[str, float], mode: str,
            iterations: int = 60) -> CategoryWeights:
        """``sigma``: the noise sd of the DP slot counts, one for every column or one per column name
        (:meth:`~dpsynth.data.metadata.DPMetadata.sigmas`: a declared target's histogram may have its own)."""
        if mode not in ("probs", "logits"):
            raise ValueError(f"mode must be 'probs' or 'logits'. Found {mode!r}.")
        counts = transformer.slot_counts()
        spans, weights = {}, {}
        for i, span in enumerate(transformer.output_info):
            if span.role != "category" or i not in counts:
                continue
            noise = float(sigma.get(span.column, 0.0)) if isinstance(sigma, Mapping) else float(sigma)
            target = category_target(np.asarray(counts[i], dtype=float), noise)
            if target.sum() <= 0 or len(target) != span.end - span.start:
                continue
            target = target / target.sum()
            block = np.asarray(reference[:, span.start : span.end], dtype=float)
            spans[i] = (span.start, span.end)
            weights[i] = _fit_log_weights(block, target, mode, iterations)
        return cls(spans, weights, mode)

    def apply(self, arr: np.ndarray, *, inplace: bool = False) -> np.ndarray:
        """The reweighted rows, in ``arr``'s float dtype (a copy unless ``inplace``; only the spans are touched)."""
        out = arr if inplace else np.array(arr, dtype=np.result_type(arr.dtype, np.float32), copy=True)
        for i, (start, end) in self.spans.items():
            w = self.log_weights[i].astype(out.dtype)
            block = out[:, start:end]
            if self.mode == "probs":
                np.clip(block, 0.0, None, out=block)
                block *= np.exp(w)
            else:
                block += w
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "spans": {str(i): list(se) for i, se in self.spans.items()},
                "log_weights": {str(i): w.tolist() for i, w in self.log_weights.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CategoryWeights:
        return cls({int(i): (int(se[0]), int(se[1])) for i, se in d["spans"].items()},
                   {int(i): np.asarray(w, dtype=float) for i, w in d["log_weights"].items()}, str(d["mode"]))


def _knots(edges: np.ndarray, counts: np.ndarray, specials: dict[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The knots ``(x, F(x))`` of a distribution uniform within each bin, with a point mass at each special value
    (a vertical step: two knots at the same x), normalised to F = 1 at the end; a bin that holds a special value
    is split at it. ``np.interp(u, F, x)`` is then its quantile function (a u inside a step gives the special)."""
    segments = []  # (lo, hi, mass): a bin, or a point mass when lo == hi
    for lo, hi, mass in zip(edges[:-1], edges[1:], counts):
        cuts = sorted(v for v in specials if lo < v < hi)
        bounds = [lo, *cuts, hi]
        for a, b in zip(bounds[:-1], bounds[1:]):
            share = (b - a) / (hi - lo) if hi > lo else 1.0  # a zero-width bin (lower == upper) holds all its mass
            segments.append((float(a), float(b), float(mass) * share))
    segments += [(v, v, m) for v, m in specials.items()]
    segments.sort(key=lambda seg: (seg[0], seg[1]))
    xs, cs = [segments[0][0]], [0.0]
    for lo, hi, mass in segments:
        if lo > xs[-1]:
            xs.append(lo)
            cs.append(cs[-1])
        xs.append(hi)
        cs.append(cs[-1] + mass)
    cdf = np.asarray(cs) / cs[-1]
    return np.asarray(xs), cdf


#: a merged bin (or a category slot) counts as non-empty when its noisy count clears this many noise sds
_CLEAR_SD = 2.0
#: coarsen until the bins that clear the bar hold this share of the histogram's noisy total
_KEPT_SHARE = 0.8


def coarsened(counts: np.ndarray, edges: np.ndarray, sigma: float | np.ndarray, total: float | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """A noisy histogram made usable as a CDF (post-processing of DP counts): adjacent bins merged in blocks of
    ``w = 1, 2, 4, ...`` bins (noise sd ``sigma sqrt(w)`` per block, while the signal grows with ``w``) until the
    blocks whose count clears ``_CLEAR_SD`` of their noise hold ``_KEPT_SHARE`` of ``total`` (an estimate of the
    histogram's mass; :class:`MarginalMap` passes the DP row count minus the missing and special cells); the
    others are empty. On a large table that is ``w = 1`` (the bins as measured); on a small one, unit bins of a
    few dozen rows each are all below the noise, and thresholding them one by one would leave nothing (the map was
    then skipped and the model's own marginal kept, however far off). ``sigma``: one noise sd, or one per bin (a
    zoom's sub-bins are noisier). Returns (counts, edges) of the blocks."""
    counts = np.asarray(counts, dtype=float)
    variances = np.broadcast_to(np.asarray(sigma, dtype=float), counts.shape) ** 2
    if not np.any(variances > 0):
        return counts, edges
    if total is None:
        # the unclipped sum estimates the mass without bias (clipping would add ~0.4 sigma per empty bin), but its
        # noise grows with the number of bins: callers pass a better estimate when they have one
        total = float(counts.sum())
    total = max(total, 0.0)
    width = 1
    while True:
        starts = np.arange(0, len(counts), width)
        blocks = np.add.reduceat(counts, starts)
        kept = np.where(blocks >= _CLEAR_SD * np.sqrt(np.add.reduceat(variances, starts)), blocks, 0.0)
        if kept.sum() >= _KEPT_SHARE * total or len(blocks) == 1:
            return np.clip(kept, 0.0, None), edges[np.r_[starts, len(counts)]]
        width *= 2


def category_target(counts: np.ndarray, sigma: float) -> np.ndarray:
    """Noisy slot counts as a target marginal (post-processing). Clipping at 0 leaves about 0.4 sigma in each
    empty slot (the mean of a half-normal); when that adds up to less than 5% of the mass (few slots: a binary
    column, say) the clipped counts are used as they are, since a threshold would erase a real minority slot
    (240 rows of 4,000 against 2 sigma = 250); otherwise slots below ``_CLEAR_SD`` sigma are empty — unless that
    would leave a single slot while the clipped counts have several: a model must not return a constant column
    when its DP histogram is not (a 325-row table's three classes at 101 / 116 / 378 with sigma 97)."""
    counts = np.asarray(counts, dtype=float)
    if sigma <= 0:
        return counts
    clipped = np.clip(counts, 0.0, None)
    if len(counts) * 0.4 * sigma <= 0.05 * clipped.sum():
        return clipped
    kept = np.where(counts >= _CLEAR_SD * sigma, counts, 0.0)
    if np.count_nonzero(kept) <= 1 < np.count_nonzero(clipped):
        return clipped
    return kept


#: how far below the other slots' log-weights an empty slot's is held (e^-50 ~ 2e-22: never drawn in practice)
EMPTY_LOG_WEIGHT = 50.0


def _fit_log_weights(block: np.ndarray, target: np.ndarray, mode: str, iterations: int) -> np.ndarray:
    """Fixed-point iteration b <- b + step * (log target - log current frequencies); returns the best iterate.

    In ``"probs"`` mode the frequencies are smooth in ``b`` and the iteration converges. In ``"logits"`` mode
    they are argmax counts that move in jumps, so a fixed step can oscillate (one category swallowing most rows
    on the last iterate): the step decays and the iterate with the smallest total-variation distance to the
    target is kept, so the weights never make the marginal worse than no weights on the non-empty slots (iterate 0).
    """

    if mode == "probs":
        block = np.clip(block, 0.0, None)  # once, not per iteration

    def frequencies(b: np.ndarray) -> np.ndarray:
        if mode == "probs":
            p = block * np.exp(b)
            p /= np.maximum(p.sum(axis=1, keepdims=True), 1e-300)
            return p.mean(axis=0)
        return np.bincount(np.argmax(block + b, axis=1), minlength=block.shape[1]) / len(block)

    empty = target <= 0  # held at -EMPTY_LOG_WEIGHT below the others (log 0 has no fixed point)
    full = ~empty
    b = np.where(empty, -EMPTY_LOG_WEIGHT, 0.0)
    best_b, best_tvd = b.copy(), np.inf
    for t in range(iterations + 1):
        current = frequencies(b)
        tvd = 0.5 * float(np.abs(current - target).sum())
        if tvd < best_tvd:
            best_b, best_tvd = b.copy(), tvd
        if t == iterations:
            break
        step = 1.0 if mode == "probs" else 0.5 / np.sqrt(1.0 + t / 5.0)  # argmax jumps: damp, then decay
        b[full] += step * (np.log(target[full]) - np.log(np.maximum(current[full], 1e-6)))
        b[full] -= b[full].max()
        b[full] = np.maximum(b[full], -30.0)
    return best_b
