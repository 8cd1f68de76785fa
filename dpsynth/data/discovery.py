"""Resolve the schema a model trains on, and release DP statistics with it (DESIGN.md §1 rule 2).

``resolve_schema(data, schema, ledger=..., share=...)`` returns ``(schema, DPMetadata)``:

* **Public schema given**: the schema is used as declared (and the data validated against it); the metadata
  phase releases a noisy row count and one noisy histogram per column (declared categories, or a grid inside
  the declared bounds) with the Gaussian mechanism, then the zooms below.
* **Zoom** (every path; :func:`release_zooms`): a numeric column on the 64-bin grid whose DP mass (90% of it) lies
  in a quarter of the grid or less gets one more histogram, in finer bins (one a value for whole numbers) inside
  that run of bins: bounds stretched by a few outliers no longer leave nearly every row in one bin. Each column that
  may zoom (public structure) holds back a quarter of a histogram's budget; the columns that need one share it.
* **No schema, private dtypes** (``dtypes="private"``; ``dpsynth fit FILE.csv``): the frame's dtypes were inferred
  from its values, so they are private. Every cell is text (:mod:`dpsynth.data.text`); per column, query 1 counts
  integer-valued numbers by decade, other numbers by decade, exact zeros, missing cells and text cells; the kind
  (numeric if the floored number mass exceeds the noisy text count, integer if no non-integer decade clears the
  floor, mixed as below), the bounds and the dtype (fixed per kind: Int64, float64, str) follow from it by
  post-processing; every column is nullable. A text column then gets its profile (stage 1). Query 2 (stage 2) is the
  shape histogram (numeric; text tokens are missing values) or partition selection with the missing count (text).
  The plan counts 2k + 1 weight-1 queries, k profiles and k step reserves for k columns (any column may be text,
  any may hold fractions), so sigma is fixed before any answer.
* **No schema, public dtypes** (default for a DataFrame: its dtypes were chosen by whoever built it, or wrote
  the Parquet file, and are treated as public structure): the schema is discovered with DP, in the two stages of
  the allocation below:
  - column kinds come from dtypes (public structure of the frame, not its values): bool -> binary,
    text/category -> categorical, integer dtype -> integer, float -> continuous;
  - category domains by Gaussian partition selection (thresholded noisy counts). **Rule for rare
    categories:** a value whose noisy count is below the threshold is not released; its rows are mapped to
    an explicit ``"__other__"`` category when the DP estimate of their number (row count minus released counts)
    clears 2.33 noise sds, else they are read as missing (``unknown_as_missing``): no row is dropped, and a
    two-valued column does not get a third slot its counts cannot tell from empty. A text column for which no value
    clears the threshold (an identifier, a column that is all or almost all missing) is excluded, with a warning;
  - numeric columns with two Gaussian count queries each. (1) **Bounds and kind** from a noisy histogram
    over a fixed, data-independent grid of whole decades (``+-[1e-3, 1e10]``: 13 bins per sign, one bin for
    ``0 < |x| < 1e-3`` and one for exact zeros). Bins whose noisy count is below a floor (a count that pure
    noise on any of the grid's bins exceeds with probability 1%) are treated as empty (post-processing);
    bounds are the edges of the decades holding the ``TAIL`` and ``1 - TAIL`` quantiles of what remains, so
    they are coarse (a decade) but cover the bulk: values outside are clipped, with a warning naming the
    count. A column with no decade above the floor (too few non-missing values) is excluded, with a warning.
    A noisy zero mass >= 10% of the total, beside non-zero mass, makes the column ``mixed`` with special value 0.
    Decades are wide on purpose: the signal of a bin grows with its width, the noise does not, so thin tails
    (e.g. the 8% of non-zero capital gains in Adult, spread over three decades) are still seen.
    (2) **Shape**: a noisy histogram inside those bounds, on the grid a public schema would get (unit bins for
    integer ranges up to 200, else 64 equal bins), with the zero (special value) and missing counts as cells of
    the same query. This is the DP histogram the encoders and marginal matching use;
  - the **step** of each float column (one more stage-1 query at a histogram's weight, :func:`release_step`): each
    value counts in the cell of the coarsest of ``STEP_CANDIDATES`` (1, 0.5, 0.25, 0.1, ..., 1e-6) it is a
    multiple of, or in a last cell; the step is the coarsest candidate none of whose "off" cells clears the noise
    floor (King County's floors 0.5, bathrooms 0.25, latitude 0.0001; a float column of whole numbers 1), decided
    only when the floor is below 5% of the column's rows (else none). With private dtypes every column holds back
    a quarter-weight reserve that the columns found to hold non-integer numbers share;
  - missing-value fractions by the noisy count of a "missing" cell in every histogram; text, float and pandas
    nullable (``Int64``, ``boolean``) columns are marked nullable (a NumPy int or bool dtype cannot hold NaN).

**No column aborts a fit**: a column discovery cannot release at this budget is excluded (``Schema.excluded``) with one
warning naming it, why, and what would keep it (:func:`warn_excluded`); only a table with no usable column is refused.

Messages (DESIGN.md §1 rule 8): a DP fit's warnings and errors name the rule and the column and quote only DP
outputs: clipping is reported from the two out-of-range cells of the column's histogram query ("about N rows, a DP
estimate"), never from the exact count; schema mismatches quote no value and no count (``Schema.validate``).
* **Non-private mode** (``epsilon=inf``): :func:`~dpsynth.data.inference.infer_schema` and exact counts,
  recorded as non-private events.

Neighbouring relation: add/remove one row of the private table (the ledger's). Budget: every query is a Gaussian
count of L2 sensitivity 1 (add/remove one record touches exactly one cell per query: a row is missing, or text, or
a number in one decade; out-of-range numbers have cells of their own; a profile's frequent mass moves by at most 1;
a zoom counts a row in at most one sub-bin).
The metadata phase alone is (share * epsilon, delta / 2)-DP (Gaussians compose to one Gaussian: mu^2 = the sum of
1 / sigma_i^2); partition selection adds delta / 4 in total (split over the columns that run it). The ledger
composes the phase with training phases (PLD/RDP), so the final epsilon is that of the whole release.

**Allocation: the metadata budget goes where it is needed** (:class:`Allocation`). The queries run in two stages.
Stage 1 asks what each column is: the row count and each numeric column's bounds (weight 1), and for each text
column a *profile* (weight 1/4, twice the noise sd; :func:`profile_counts`): its noisy mass of rows beyond a quarter
of the release threshold, per value. An identifier, free text, dates stored as text or an all-missing column have
none, and are excluded there; so is a numeric column with too few values to bound. Stage 2 runs one histogram (or
partition selection) per column still in, at the sigma that spends exactly what the phase has left: on a table
where half the text columns are identifiers, the kept columns' histograms get about twice the budget each. The plan
(:func:`plan_discovery`, printed before any query) assumes every column is kept, so its sigma and release threshold
are the worst case. Each ledger entry records its ``sigma`` and ``budget_share`` (its part of the phase's GDP
budget mu^2), so ``dpsynth ledger`` shows the allocation. A declared target (``fit(..., target=...)``,
``dpsynth fit --target``) found to be text holds a *reserve* in stage 2: it is released first, like any column, and
only when a class is missing (fewer than two released, or rows left over for an "other" slot) is it released again
from the reserve - as much budget as the other columns' histograms together - so the column to predict keeps classes
an ordinary column would lose; when nothing is missing the reserve goes to the other columns (:func:`plan_discovery`,
:func:`release_stage_two`).
Two rules keep rarely used slots out: a two-valued column gets no "other" slot its counts cannot tell from empty,
and a missing-value cell below 2 noise sds is read as 0.

What this costs in practice (the bundled Adult train split, 32,561 rows x 15 columns, no schema, epsilon = 1,
the default 10% share: sigma ~ 160): bounds clip at most 0.04% of any column's rows (hours-per-week: up to 1.4%
on some seeds), capital-gain and capital-loss come out mixed with special value 0, and the partition-selection
threshold is ~800 rows (2.5%): categories below it (e.g. education's 1st-4th ... 12th, Doctorate) go to
``__other__``. Fewer columns, more rows or a larger share lower the cut; a public schema avoids it.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import norm

from dpsynth.data.frame import categorical_codes, check_frame
from dpsynth.data.inference import GRID_BINS, ID_LIKE_RATIO, infer_schema, unit_grid
from dpsynth.data.metadata import CategoricalHistogram, DPMetadata, NumericHistogram, pooled_count, with_row_total
from dpsynth.data.schema import Column, Schema
from dpsynth.data.text import DTYPE_MODES, infer_text_dtypes, parse_numbers
from dpsynth.errors import InputError
from dpsynth.privacy.calibration import calibrate_noise
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.mechanisms import (
    count_event,
    discrete_counts,
    gaussian_counts,
    gaussian_partition_selection,
    selection_threshold,
)
from dpsynth.privacy.secure_noise import noise_mode

__all__ = ["resolve_schema", "prepare_private_text", "OTHER", "geometric_grid", "calibrate_metadata_sigma", "TAIL",
           "DiscoveryPlan", "plan_discovery", "warn_excluded", "public_grid", "public_schema_release", "numeric_cells",
           "categorical_cells", "zooms", "zoom_window", "release_zooms", "ZOOM_RESERVE",
           "STEP_CANDIDATES", "step_classes", "step_class_sql", "release_step", "dp_step", "TARGET_SHARE",
           "release_stage_two", "target_short"]

OTHER = "__other__"
#: an "other" slot is added when the DP estimate of the unreleased rows exceeds this many noise sds (1% by chance)
OTHER_Z = 2.33
TAIL = 0.005  # quantile level of the DP bounds
PHASE = "metadata"
_DECADES = (-3, 10)  # decade grid for DP bounds: +-[1e-3, 1e10]
_SPURIOUS = 0.01  # chance that pure noise on any of a column's decade bins clears the floor
#: weight of a text column's profile query (a quarter of a histogram's GDP budget: twice its noise sd)
W_PROFILE = 0.25
#: A declared text target's stage-2 reserve, as a part of the GDP budget of the reserve and the other stage-2 column
#: queries: spent on a second partition selection of the target when its first misses a class, so a rare class of the
#: column to predict clears a lower release threshold; else handed to the other columns (:func:`plan_discovery`)
TARGET_SHARE = 0.5
#: the profile counts rows beyond this fraction of the planned release threshold, per value
PROFILE_CUT = 0.25
#: a profile whose noisy frequent mass is below this many noise sds excludes its column (5% of empty ones pass)
PROFILE_Z = 1.64
MIXED_ZERO_SHARE = 0.10  # noisy share of exact zeros above which a numeric column is "mixed" with special 0
#: the steps DP discovery can find for a column of non-integer numbers (:func:`release_step`), coarsest first. The
#: set is closed under least common multiples (0.25 and 0.1 -> 0.5), so a value's class - the coarsest candidate it
#: is a multiple of - tells for every candidate whether the value is a multiple of it
STEP_CANDIDATES = (1.0, 0.5, 0.25, 0.1, 0.05, 0.01, 0.005, 0.001, 1e-4, 1e-5, 1e-6)
#: weight of a float column's step query (a histogram's GDP budget). With private dtypes any column may hold
#: non-integer numbers: each column holds back STEP_RESERVE of a histogram's budget, and the columns found to hold
#: them share it (at most W_STEP each; what is left goes to stage 2)
W_STEP = 1.0
STEP_RESERVE = 0.25
#: a step is decided only when a class of this share of the column's rows would clear the noise floor (else no
#: step: the budget cannot tell); rows off the step's multiples may then be up to about this share, and their
#: sampled values move by less than half a step
STEP_SHARE = 0.05


def geometric_grid() -> np.ndarray:
    """Data-independent decade edges ``-1e10 ... -1e-3, 1e-3 ... 1e10`` used for DP bounds (the bin between
    -1e-3 and 1e-3 holds non-zero values near 0; exact zeros are counted on their own)."""
    # exact decimal constants: np.logspace picks SIMD kernels by CPU and gives 0.09999999999999999 for 1e-1 on
    # some (AVX-512), which moved bins and reached released schemas as a bound
    pos = np.array([float(f"1e{k}") for k in range(_DECADES[0], _DECADES[1] + 1)])
    return np.concatenate([-pos[::-1], pos])


@functools.lru_cache(maxsize=256)  # a pure function of its arguments, and ~2 s of PLD accounting per call
def calibrate_metadata_sigma(n_queries: int, epsilon: float, delta: float, discrete: bool = False) -> float:
    """Smallest sigma (to 0.1%) such that ``n_queries`` Gaussian counts (sensitivity 1) compose to
    (epsilon, delta)-DP under the ledger's default accountant; never above the target (dpsynth's one calibration
    routine, :func:`dpsynth.privacy.calibration.calibrate_noise` at sampling rate 1). k such queries are one
    Gaussian mechanism of mu = sqrt(k) / sigma (Dong et al. 2022, Cor. 3.3), which the PLD accountant composes
    exactly. ``discrete``: discrete Gaussian counts (``noise="secure"``), through their own PLD."""
    if n_queries < 1:
        raise InputError(f"n_queries must be >= 1. Found {n_queries}.")
    return calibrate_noise(target_epsilon=epsilon, delta=delta, sample_rate=1.0, steps=n_queries, accountant="best",
                           rtol=1e-3, discrete=discrete)

def resolve_schema(
    data: pd.DataFrame,
    schema: Schema | None,
    *,
    ledger: PrivacyLedger,
    share: float,
    rng: np.random.Generator,
    progress: bool = False,
    dtypes: str = "public",
    target: str | None = None,
) -> tuple[Schema, DPMetadata]:
    """See the module docstring. Records every query in ``ledger`` under phase "metadata". ``target``: the declared
    column to predict (a public schema carries its own; DP discovery gives it a larger share: :func:`plan_discovery`).

    ``dtypes="private"``: ``data`` holds text (:func:`dpsynth.data.text.as_text`) and, without a schema, each
    column's kind, integrality, nullability and dtype are decided by DP counts (the module docstring); call
    :func:`prepare_private_text` on the data with the returned schema before conforming it."""
    check_frame(data)
    if dtypes not in DTYPE_MODES:
        raise InputError(f"dtypes must be one of {', '.join(DTYPE_MODES)}. Found {dtypes!r}.")
    non_private = ledger.non_private
    if schema is None and non_private:
        schema = infer_schema(infer_text_dtypes(data) if dtypes == "private" else data, target=target, warn=True)
    if schema is not None:
        if dtypes == "private":
            data = prepare_private_text(data, schema)
        schema.validate(data, exact=non_private)  # a DP fit's messages carry no private values or counts
        return schema, _public_schema_stats(data, schema, ledger, share, rng)
    if dtypes == "private":
        from dpsynth.data.discovery_text import discover_private_dtypes  # it builds on this module's helpers

        return discover_private_dtypes(data, ledger, share, rng, target=target)
    return _discover(data, ledger, share, rng, target)


def prepare_private_text(data: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """A text frame (``dtypes="private"``) made ready for :func:`~dpsynth.data.frame.conform`: the schema's numeric
    columns parsed by the fixed number rule, their non-number tokens missing (the documented handling); text
    columns unchanged. Reads no more than conform does and releases nothing."""
    out = data.copy()
    for col in schema.columns:
        if col.is_numeric and col.name in out.columns:
            out[col.name] = parse_numbers(out[col.name])[0]
    return out


# ---------------------------------------------------------------------------------------------- pre-flight
@dataclass(frozen=True)
class DiscoveryPlan:
    """What DP discovery can resolve, from public facts only (epsilon, delta, metadata share, the number of columns
    and, for public dtypes, how many are numeric) - computed before any query is answered.

    ``sigma``: the noise sd of a weight-1 query when every column is kept (stage 2 recalibrates it, lower, when
    stage 1 excludes columns). ``category_rows``: a text value is released when its noisy count clears this
    threshold (so a value needs about that many rows: at exactly that count it is released half of the time).
    ``bound_rows``: a decade of numbers is seen when its noisy count clears this floor (a numeric column needs about
    that many non-missing values in one decade to be bounded; the worst case, a non-integer column). ``weights``:
    the planned ``(weight, count)`` pairs of the allocation (module docstring)."""

    n_columns: int
    n_queries: int
    sigma: float
    category_rows: float
    bound_rows: float
    weights: tuple[tuple[float, int], ...] = ()
    zooms: int = 0  # numeric columns that may get a zoom (the budget held back for them is in ``weights``)
    steps: int = 0  # private dtypes: columns that may get a step query (a reserve in ``weights``, as for zooms)
    target: str | None = None  # the declared target, if it may need a reserve (text); else None
    target_reserve: float = 0.0  # the weight of the target's stage-2 reserve (:func:`plan_discovery`)

    @property
    def target_rows(self) -> float:
        """The release threshold of a text target's classes when its reserve is spent (``category_rows`` grows by
        sqrt(stage2_scale) while the reserve is held; the reserve's selection shrinks it by sqrt(target_reserve))."""
        return self.category_rows * math.sqrt(self.stage2_scale / self.target_reserve)

    @property
    def stage2_scale(self) -> float:
        """How much the stage-2 noise variance of the weight-1 queries grows while a text target's reserve is held
        (and, if it is spent, for good): the k stage-2 queries' budget is shared with a reserve of weight w."""
        return (self.n_columns + self.target_reserve) / self.n_columns if self.target is not None else 1.0

    @property
    def profile_cut(self) -> float:
        """The per-value count above which a text value's rows count as "frequent" in its profile query; a whole
        number under ``noise="secure"``, so the frequent mass is an integer for the discrete Gaussian (still of
        sensitivity 1)."""
        cut = PROFILE_CUT * self.category_rows
        return float(math.ceil(cut)) if noise_mode() == "secure" else cut

    @property
    def planned_precision(self) -> float:
        """The phase's whole GDP budget mu^2 = sum of weight / sigma^2 over the planned queries."""
        return sum(w * c for w, c in self.weights) / self.sigma ** 2 if self.sigma > 0 else 0.0

    def describe(self, n_rows: float | None = None) -> str:
        extra = [f"{self.zooms} zoom(s)"] * bool(self.zooms) + [f"{self.steps} step queries"] * bool(self.steps)
        zooms = f" and up to {' and '.join(extra)}" if extra else ""
        text = (f"DP discovery of {self.n_columns} column(s) ({self.n_queries} Gaussian count queries{zooms}, noise sd "
                f"{self.sigma:.0f}): a category is released from about {self.category_rows:.0f} rows, numeric bounds "
                f"need about {self.bound_rows:.0f} non-missing values in one decade")
        if self.target is not None:
            text += (f"; the target '{self.target}', if text, is released first, and again from a reserve (as much "
                     f"budget as the other columns' histograms) if a class is missing: a class of it is then released "
                     f"from about {self.target_rows:.0f} rows (the other columns' categories from about "
                     f"{self.category_rows * math.sqrt(self.stage2_scale):.0f}; from about "
                     f"{self.category_rows:.0f} when the reserve is not needed)")
        if n_rows is not None:
            text += f"; the table has about {n_rows:.0f} rows (a DP estimate)"
        return text + "."

    def feasible(self, n_rows: float) -> bool:
        """Whether any column could be released from a table of ``n_rows`` rows (the smaller requirement)."""
        return n_rows >= min(self.category_rows, self.bound_rows)


def plan_discovery(data, *, epsilon: float, delta: float, share: float, dtypes: str = "public",
                   target: str | None = None) -> DiscoveryPlan:
    """The :class:`DiscoveryPlan` of a DP fit of ``data`` without a schema. ``data``: a pandas frame or a column
    source (:class:`FrameColumns`; an engine-held table's :class:`~dpsynth.marginals.tables.SQLColumns`). Reads
    the table's shape and (public dtypes only) its column types, never a value: the same plan the fit uses to
    calibrate its queries.

    ``target``: the column the synthetic data is to predict (public: the analyst's choice). Stage 1 (row count,
    bounds, profiles, steps) is planned and run as without it, but for the target's profile: a declared target is
    wanted whatever its values, so a text target goes to stage 2 without one (an identifier declared as target then
    releases no value there, and is warned about). In stage 2, when stage 1 found the target to be text (a number
    or a boolean has no release threshold to clear), it holds a reserve of weight w = TARGET_SHARE / (1 -
    TARGET_SHARE) (k - 1) for k columns - TARGET_SHARE of the budget of the reserve and the k - 1 other column
    queries - while it is released first, at the weight-1 sigma (whose variance grows by (k + w) / k while the
    reserve is held). When that release misses a class (:func:`target_short`: DP outputs only), the reserve pays for a
    second partition selection at sigma / sqrt(w), whose release replaces the first; otherwise the reserve goes to the
    other columns, whose sigma is recalibrated on what is left (:func:`release_stage_two`). On the loan table (4,000
    rows x 14 columns, epsilon 1, share 0.1, every cell text) the plan's threshold for a class of the target's second
    release is ~400 rows instead of ~1,040 (~1,450 for the other columns then, ~1,040 when the reserve is not
    spent)."""
    source = FrameColumns(data) if isinstance(data, pd.DataFrame) else data
    if target is not None and target not in list(source.names):
        raise InputError(f"target must be a column of the data. Found {target!r}.")
    types = [source.column_type(name) for name in source.names]
    if dtypes == "private":  # any column may turn out to be text: a profile is planned for each
        k = len(types)
        n_text, n_selection = k, k
        n_zooms = k
        n_steps = k  # a reserve, shared by the columns found to hold non-integer numbers
        weights = ((1.0, 2 * k + 1), (W_PROFILE, k), (STEP_RESERVE, n_steps), (ZOOM_RESERVE, n_zooms))
    else:
        types = [t for t in types if t is not None]  # a type no model represents: excluded before any query
        k = len(types)
        n_numeric = sum(t in _NUMERIC_TYPES for t in types)
        n_text = sum(t == "text" for t in types)
        n_selection = max(1, n_text)
        n_zooms, n_steps = n_numeric, 0
        n_float = sum(t == "float" for t in types)  # a step query each (:func:`release_step`)
        weights = ((1.0, k + n_numeric + 1), (W_PROFILE, n_text), (W_STEP, n_float), (ZOOM_RESERVE, n_zooms))
    reserve = 0.0
    if target is not None and source.column_type(target) == "text" and k > 1:
        reserve = TARGET_SHARE / (1.0 - TARGET_SHARE) * (k - 1)  # w / (k - 1 + w) = TARGET_SHARE
        n_selection += 1  # the reserve's partition selection takes a share of the selections' delta
    else:
        target = None  # a number or a boolean of public dtype (or an unrepresented column): no threshold to clear
    weights = tuple((w, c) for w, c in weights if c > 0)
    sigma = calibrate_noise(target_epsilon=share * epsilon, delta=delta / 2, sample_rate=1.0, weights=weights,
                            accountant="best", rtol=1e-3, discrete=discrete_counts())
    threshold = selection_threshold(sigma, delta / 4 / n_selection)
    cells = 2 * (len(geometric_grid()) - 1) + 3  # the private-dtypes kind-and-bounds query (the larger one)
    floor = math.sqrt(2.0) * sigma * float(norm.isf(_SPURIOUS / cells))
    # the zoom and step reserves are no query until a column needs them
    return DiscoveryPlan(k, sum(c for _, c in weights) - n_zooms - n_steps, sigma, threshold, floor, weights, n_zooms,
                         n_steps, target, reserve)


def plan_for_ledger(data, ledger: PrivacyLedger, share: float, dtypes: str,
                    target: str | None = None) -> DiscoveryPlan | None:
    """The plan a DP discovery runs on (None in the non-private mode, which adds no noise)."""
    if ledger.non_private:
        return None
    return plan_discovery(data, epsilon=ledger.target_epsilon, delta=ledger.target_delta, share=share, dtypes=dtypes,
                          target=target)


def check_feasible(plan_: DiscoveryPlan | None, n_rows: float) -> None:
    """Refuse, right after the DP row count (the only query spent), a table too small for any column to be
    released: fail early, with the numbers, instead of after the whole metadata budget."""
    if plan_ is not None and not plan_.feasible(n_rows):
        raise InputError(f"This table is too small for DP discovery at this budget: {plan_.describe(n_rows)} Give a "
                         "public schema (--schema), raise epsilon or --metadata-share, or drop columns.")


class Allocation:
    """The metadata phase's budget, spent in two stages (module docstring, "Allocation"). A ledger view: every
    query spent through it is recorded in the real ledger under phase "metadata" with ``budget_share``, its part of
    the phase's planned GDP budget (1 / sigma^2 over ``plan.planned_precision``; the shares of a phase sum to ~1).

    Stage 1 queries use the plan's sigma over sqrt(weight). :meth:`stage_two` calibrates the sigma of the remaining
    weight-1 queries against what stage 1 actually spent: columns excluded in stage 1 leave their budget to the
    others. The choice of stage-2 sigma depends on stage-1 outputs; that is fully adaptive composition, which for
    Gaussian mechanisms keeps the total: a sequence of Gaussians whose sum of 1/sigma_i^2 stays within mu^2 is
    mu-GDP however each sigma_i was chosen (Smith & Thakurta 2022, GDP filters; Whitehouse et al. 2023 for zCDP).
    The stage-2 sigma is evaluated by the ledger's accountant on the recorded stage-1 events plus the new ones, so
    the phase stays within (share * epsilon, delta / 2) as before."""

    def __init__(self, ledger: PrivacyLedger, share: float, plan: DiscoveryPlan | None):
        self.ledger, self.share, self.plan = ledger, share, plan
        self.non_private = ledger.non_private
        self.target = None  # the declared target's name while stage 2 holds its reserve (:meth:`hold_reserve`)

    def sigma(self, weight: float = 1.0) -> float:
        """A stage-1 query's noise sd (0 in the non-private mode)."""
        return 0.0 if self.plan is None else self.plan.sigma / math.sqrt(weight)

    def spend(self, event, *, phase, **params) -> None:
        sigma = params.get("sigma", 0.0)
        if self.plan is not None and sigma > 0:
            share = 1.0 / sigma ** 2 / self.plan.planned_precision
            params["budget_share"] = round(share, 4)
        self.ledger.spend(event, phase=phase, **params)

    def hold_reserve(self, pending: dict) -> None:
        """Stage 2 is about to run on ``pending`` (column name -> what stage 1 found: "text", "bool", None for text
        with private dtypes, or a numeric Column): the declared target holds its reserve when it is still in and
        text (a decision on stage 1's DP outputs and the public target name)."""
        target = None if self.plan is None else self.plan.target
        self.target = next((name for name, what in pending.items()
                            if str(name) == target and (what is None or what == "text")), None)

    def reserve_sigma(self, sigma: float) -> float:
        """The noise sd of the target's second release, which spends its reserve, when the weight-1 queries have
        ``sigma`` (calibrated with the reserve held)."""
        return sigma / math.sqrt(self.plan.target_reserve)

    def release_reserve(self) -> None:
        """The target's reserve is spent or no longer needed: :meth:`stage_two` holds it back no more."""
        self.target = None

    def stage_two(self, n_queries: int, reserve: int = 0) -> float:
        """The sigma of ``n_queries`` more weight-1 queries that spends what is left of the phase's budget, less
        ``ZOOM_RESERVE`` for each of ``reserve`` zooms (the zoom stage calls it again: ``reserve=0`` spends all) and
        less the target's reserve while it is held (:meth:`hold_reserve`)."""
        if self.plan is None or n_queries == 0:
            return 0.0 if self.plan is None else self.plan.sigma
        held = self.plan.target_reserve if self.target is not None else 0.0
        return _rest_sigma(self.ledger, n_queries, self.share, reserve, held=held)


# ---------------------------------------------------------------------------------------------- helpers
def _sigma(ledger: PrivacyLedger, n_queries: int, share: float, reserve: int = 0) -> float:
    """The sigma of ``n_queries`` weight-1 queries, with ``ZOOM_RESERVE`` held back for each of ``reserve`` zooms."""
    if ledger.non_private:
        return 0.0
    if reserve == 0:
        return calibrate_metadata_sigma(n_queries, share * ledger.target_epsilon, ledger.target_delta / 2,
                                        discrete_counts())
    return calibrate_noise(target_epsilon=share * ledger.target_epsilon, delta=ledger.target_delta / 2,
                           sample_rate=1.0, weights=((1.0, n_queries), (ZOOM_RESERVE, reserve)), accountant="best",
                           rtol=1e-3, discrete=discrete_counts())


def _rest_sigma(ledger: PrivacyLedger, n_queries: int, share: float, reserve: int = 0, *, held: float = 0.0
                ) -> float:
    """The sigma of ``n_queries`` more weight-1 queries that spends what is left of the phase's budget after the
    phase's recorded events, less ``ZOOM_RESERVE`` for each of ``reserve`` zooms and a query of weight ``held`` (a
    declared target's reserve)."""
    if ledger.non_private:
        return 0.0
    spent = [(e.event, e.count) for e in ledger.entries if e.phase == PHASE]
    weights = ((1.0, n_queries), (ZOOM_RESERVE, reserve)) + (((held, 1),) if held > 0 else ())
    return calibrate_noise(target_epsilon=share * ledger.target_epsilon, delta=ledger.target_delta / 2,
                           sample_rate=1.0, weights=weights, prior=spent, accountant="best", rtol=1e-3,
                           discrete=discrete_counts())


def spend_metadata(ledger: PrivacyLedger, sigma: float, mechanism: str, extra_delta: float = 0.0, **params) -> None:
    ledger.spend(count_event(sigma), phase=PHASE, mechanism=mechanism, extra_delta=extra_delta, sensitivity=1.0,
                 sigma=sigma, **params)


def noisy_row_count(data, ledger, sigma, rng) -> float:
    """The DP row count of a frame, or of a column source (its ``row_count()``)."""
    n = len(data) if isinstance(data, pd.DataFrame) else data.row_count()
    spend_metadata(ledger, sigma, "row count")
    return max(1.0, float(gaussian_counts(np.array([n]), sigma=sigma, rng=rng)[0]))


def public_grid(col: Column) -> np.ndarray:
    """Bin edges inside public bounds: one bin per value for small ranges of whole numbers or of multiples of a
    ``step`` (centred on each value), else 64 equal bins."""
    if col.lower == col.upper:
        return np.array([col.lower, col.upper])
    if unit_grid(col):
        step, (first, last) = col.grid_step, col.lattice()
        if first <= last:
            count = int(round((last - first) / step)) + 1
            return first - step / 2 + step * np.arange(count + 1)
    return np.linspace(col.lower, col.upper, GRID_BINS + 1)


# ---------------------------------------------------------------------------------------------- zoom
#: a zoom re-measures the shortest run of grid bins that holds this share of a column's DP mass ...
ZOOM_MASS = 0.9
#: ... when that run is at most 1 / ZOOM_GAIN of the grid (so the sub-bins are at least this many times finer) and
#: its mass above the noise is at least ZOOM_MIN_SD noise sds of its sum
ZOOM_GAIN = 4
ZOOM_MIN_SD = 5.0
#: ... in unit bins when the column holds whole numbers and the run spans at most this many of them, holding this
#: many noise sds of rows a value on average; else in GRID_BINS equal sub-bins
ZOOM_UNIT_SPAN = 1000
ZOOM_UNIT_SD = 0.25
#: the metadata budget held back for zooms: this weight (of a histogram's GDP budget mu^2) per column that may zoom
ZOOM_RESERVE = 0.25


def zooms(col: Column) -> bool:
    """Whether a numeric column may get a zoom (:func:`release_zooms`): one on the 64 equal bins of the public grid
    (a unit grid is already as fine as its values). Public structure, so the reserve is fixed before any query."""
    return not col.is_discrete and col.lower < col.upper and not unit_grid(col)


def zoom_window(counts: np.ndarray, sigma: float) -> tuple[int, int]:
    """The grid bins ``[i, j)`` of the shortest run holding ``ZOOM_MASS`` of the DP mass above 2 noise sds (clipped
    noise alone would put ~0.4 sigma in every empty bin of a long tail); the first such run. Post-processing."""
    counts = np.asarray(counts, float)
    mass = np.clip(counts - 2.0 * sigma, 0, None)
    k = len(mass)
    # the column's mass less what clipping adds to an empty bin (E max(N(0, sigma^2), 0) = 0.4 sigma): when the
    # mass above the noise is under half of it, the rows are spread thinner than the noise (King County's
    # basements at epsilon 0.3) and the bins that clear it are mostly noise: the whole grid is the window
    if mass.sum() <= 0 or mass.sum() < 0.5 * (counts.sum() - 0.4 * sigma * k):
        return 0, k
    cum = np.r_[0.0, np.cumsum(mass)]
    need = ZOOM_MASS * cum[-1]
    ends = np.searchsorted(cum, cum[:-1] + need * (1 - 1e-12), side="left")  # first j with cum[j] - cum[i] >= need
    ends = np.minimum(ends, k)
    i = int(np.argmin(np.where(cum[ends] - cum[:-1] >= need * (1 - 1e-9), ends - np.arange(k), k + 1)))
    j = int(ends[i])
    # a run whose mass above the noise is a few noise sds of its own sum is a noise spike (a small table, where
    # every bin is mostly noise), not where the rows are
    if cum[j] - cum[i] < ZOOM_MIN_SD * sigma * math.sqrt(j - i):
        return 0, k
    return i, j


def zoom_edges(col: Column, lo: float, hi: float, n_bins: int) -> np.ndarray:
    """``n_bins`` equal sub-bins of ``[lo, hi]``; for a column of whole numbers, bins of a whole number of values
    (edges at half-integers inside, so no value straddles two bins), as many as fit."""
    if not col.rounds:
        return np.linspace(lo, hi, n_bins + 1)
    width = max(1, math.ceil((hi - lo) / n_bins))
    inner = np.arange(math.floor(lo) + 0.5, hi, width)
    return np.r_[lo, inner[inner > lo], hi]


def zoom_grid(col: Column, sub: np.ndarray) -> tuple[np.ndarray, slice]:
    """The edges the zoom query counts on (the sub-bins, with one bin for the rest of the column's range on each
    side that has any) and the slice of its cells that are the sub-bins. Counting reuses :func:`numeric_cells` /
    :func:`~dpsynth.marginals.tables.metadata_cell_sql`, so a value on an edge falls where the first histogram put
    it ([edge, next edge), the column's top value in the last bin)."""
    lead, trail = bool(sub[0] > col.lower), bool(sub[-1] < col.upper)
    full = np.r_[[col.lower] * lead, sub, [col.upper] * trail]
    return full, slice(int(lead), int(lead) + len(sub) - 1)


def release_zooms(hists: dict, columns, count_cells, ledger, sigma: float, sigma_for, rng) -> None:
    """The zoom stage of the metadata phase: a finer grid where the DP mass is, for the columns that need one.

    Why: bounds stretched by outliers put nearly every row in one of the 64 grid bins (Cardio's ap_lo: 98% in one bin
    170 wide), inside which every model drew values blind (synthetic median 9 vs real 80). For each column that
    :func:`zooms`, the window is read off its DP histogram (:func:`zoom_window`: post-processing); it needs a zoom
    when the window is at most 1 / ``ZOOM_GAIN`` of the grid. Those columns get one more Gaussian count query each, at
    ``sigma_for(n)`` for n of them: the budget held back for zooms (``ZOOM_RESERVE`` per column that may zoom) spent
    on the ones that need it (none: the reserve is left unspent, at most a fifth of such a column's metadata budget).
    That n depends on DP outputs: fully adaptive composition, which keeps the phase's total (:class:`Allocation`).
    ``count_cells(col, edges)``: the exact cells of :func:`numeric_cells` on ``edges`` (a frame's or an engine's);
    only the sub-bin cells get noise and are released (a row lies in at most one: L2 sensitivity 1). ``hists``
    (column name -> its histogram at noise sd ``sigma``) is updated in place."""
    windows = {}
    for col in columns:
        if zooms(col):
            i, j = zoom_window(hists[col.name].counts, sigma)
            if (j - i) * ZOOM_GAIN <= len(hists[col.name].counts):
                windows[col.name] = (i, j)
    if not windows:
        return
    zoom_sigma = sigma_for(len(windows))
    for col in columns:
        if col.name in windows:
            hists[col.name] = release_zoom(hists[col.name], col, windows[col.name], count_cells, ledger, sigma,
                                           zoom_sigma, rng)


def release_zoom(hist: NumericHistogram, col: Column, window: tuple[int, int], count_cells, ledger, sigma: float,
                 zoom_sigma: float, rng) -> NumericHistogram:
    """One zoom (:func:`release_zooms`): the rows inside the grid bins ``window`` of ``hist`` (noise sd ``sigma``),
    counted in sub-bins with noise sd ``zoom_sigma``. Sub-bins are one a value when the column holds whole numbers
    and the window spans at most ``ZOOM_UNIT_SPAN`` of them with ``ZOOM_UNIT_SD`` noise sds of rows a value on average
    (blood pressures are heaped at multiples of 10: bins of 4 values would smear each heap over its neighbours), else
    ``GRID_BINS`` equal ones: the grid the window would get as public bounds. Many noisy cells cost little: decoding
    smooths them (:func:`~dpsynth.marginals.domain.smooth_grid_counts`), and models measure their own marginals.

    The result is ``hist`` with the window's bins replaced by the sub-bins (uneven edges). The window's total is
    measured twice (its bins in ``hist``, its sub-bins here): the sub-bins are shifted, equally, so that they sum
    to the inverse-variance mean of both, then clipped at 0 as every DP count is (post-processing)."""
    edges, counts = np.asarray(hist.edges, float), np.asarray(hist.counts, float)
    raw, sds = hist.bin_noise(sigma)
    i, j = window
    first = float(raw[i:j].sum())  # unclipped: clipped empty bins would over-count the window
    lo, hi = float(edges[i]), float(edges[j])
    unit = col.rounds and hi - lo <= ZOOM_UNIT_SPAN and first >= ZOOM_UNIT_SD * zoom_sigma * (hi - lo)
    sub = zoom_edges(col, lo, hi, math.ceil(hi - lo) if unit else GRID_BINS)
    full, part = zoom_grid(col, sub)
    cells = np.asarray(count_cells(col, full))[part]
    spend_metadata(ledger, zoom_sigma, f"zoom {col.name}", bins=len(cells), window=[_short(lo), _short(hi)])
    noisy = gaussian_counts(cells, sigma=zoom_sigma, rng=rng)
    var_first, var_zoom = float(np.sum(sds[i:j] ** 2)), len(noisy) * zoom_sigma ** 2
    total = first if var_zoom == 0 and var_first == 0 else \
        (first * var_zoom + float(noisy.sum()) * var_first) / (var_first + var_zoom)
    shifted = noisy + (total - float(noisy.sum())) / len(noisy)
    # each sub-bin's sd: zoom_sigma, slightly over (the shift mixes in the window's first measurement)
    return NumericHistogram(np.r_[edges[:i], sub, edges[j + 1 :]], np.r_[counts[:i], np.clip(shifted, 0, None),
                                                                        counts[j:]],
                            hist.special_counts, hist.missing, noisy=np.r_[raw[:i], shifted, raw[j:]],
                            bin_sd=np.r_[sds[:i], np.full(len(shifted), float(zoom_sigma)), sds[j:]],
                            row_total=hist.row_total, row_total_sd=hist.row_total_sd)  # the grid's: all rows


def _short(x) -> float:
    return float(f"{float(x):.6g}")


def numeric_counts(values: np.ndarray, edges: np.ndarray, specials: tuple[float, ...]) -> tuple[np.ndarray, list, int]:
    missing = np.isnan(values)
    present = values[~missing]
    special_counts = []
    for s in specials:
        hit = present == s
        special_counts.append(int(hit.sum()))
        present = present[~hit]
    idx = np.clip(np.searchsorted(edges, present, side="right") - 1, 0, len(edges) - 2)
    return np.bincount(idx, minlength=len(edges) - 1), special_counts, int(missing.sum())


def histogram_numeric(series: pd.Series, col: Column, edges, ledger, sigma, rng, *, warn: bool = True
                       ) -> NumericHistogram:
    """One Gaussian count query over the bins inside ``[lower, upper]``, the special values, the missing cell and
    two cells for the rows below / above the bounds (each row falls in exactly one cell: L2 sensitivity 1). The
    out-of-range cells, when they clear 2 noise sd, are added to the edge bins (where clipping puts those rows;
    post-processing) and give a DP estimate of how many rows the bounds clip: the only way a DP fit reports
    clipping (``warn``)."""
    return noisy_numeric_histogram(numeric_cells(series, col, edges), col, edges, ledger, sigma, rng, warn=warn)


def numeric_cells(series: pd.Series, col: Column, edges) -> np.ndarray:
    """The exact counts :func:`histogram_numeric` adds noise to: the bins of ``edges`` (a value in
    ``[edges[b], edges[b + 1])``, the top edge in the last bin), the special values, missing, below, above (in
    that order; an out-of-range special value counts as out of range). An SQL engine counts the same cells with
    :func:`dpsynth.marginals.tables.metadata_cell_sql`."""
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        below, above = values < col.lower, values > col.upper
    inside = np.where(below | above, np.nan, values)
    counts, specials, missing = numeric_counts(inside, edges, col.special_values)
    missing -= int(below.sum() + above.sum())  # out-of-range rows were set to NaN above; they have cells of their own
    return np.concatenate([counts, specials, [missing, below.sum(), above.sum()]]).astype(np.int64)


def noisy_numeric_histogram(cells: np.ndarray, col: Column, edges, ledger, sigma, rng, *, warn: bool = True
                            ) -> NumericHistogram:
    """The Gaussian release of :func:`numeric_cells` (wherever they were counted) and its post-processing."""
    k, n_specials = len(edges) - 1, len(col.special_values)
    spend_metadata(ledger, sigma, f"histogram {col.name}", bins=k + n_specials + 3)
    noisy = gaussian_counts(np.asarray(cells), sigma=sigma, rng=rng)
    bins = noisy[:k].copy()
    n_below, n_above = noisy[-2], noisy[-1]
    # out-of-range rows are clipped to the edge bins; a cell that does not clear 2 noise sd is read as empty, so
    # that a table inside its bounds (the usual case with a public schema) does not get twice the noise there
    sd = np.full(k, float(sigma))
    if n_below > 2.0 * sigma:
        bins[0] += n_below
        sd[0] = math.hypot(sd[0], sigma)
    if n_above > 2.0 * sigma:
        bins[-1] += n_above
        sd[-1] = math.hypot(sd[-1], sigma)
    special_counts = {s: max(0.0, float(c)) for s, c in zip(col.special_values, noisy[k : k + n_specials])}
    if warn and sigma > 0:
        _warn_clipped(col, n_below + n_above, sigma)
    hist = NumericHistogram(edges, np.clip(bins, 0, None), special_counts,
                            _missing_mass(float(noisy[-3]), sigma) if col.nullable else 0.0,
                            noisy=bins if sigma > 0 else None, bin_sd=sd if sigma > 0 else None)
    return with_row_total(hist, noisy, sigma)  # every row lies in one cell: bins, specials, missing, below, above


def _warn_clipped(col: Column, noisy_out: float, sigma: float) -> None:
    """Warn from the DP count of out-of-range rows (never from the exact one), when it clears 3 standard
    deviations of its noise (sum of two cells: sqrt(2) sigma), so pure noise rarely triggers it."""
    sd = math.sqrt(2.0) * sigma
    if noisy_out > 3.0 * sd:
        warnings.warn(f"Column '{col.name}': about {noisy_out:.0f} rows (a DP estimate, noise sd {sd:.0f}) lie outside "
                      f"the bounds [{col.lower:g}, {col.upper:g}] and are clipped to them.", stacklevel=5)


def histogram_categorical(series: pd.Series, col: Column, ledger, sigma, rng) -> CategoricalHistogram:
    return noisy_categorical_histogram(categorical_cells(series, col), col, ledger, sigma, rng)


def categorical_cells(series: pd.Series, col: Column) -> np.ndarray:
    """The exact counts :func:`histogram_categorical` adds noise to: one per declared category, then missing."""
    codes = categorical_codes(series, col.categories, col.other, unknown_as_missing=col.unknown_as_missing)
    counts = np.bincount(codes[codes >= 0], minlength=len(col.categories))
    return np.append(counts, int((codes < 0).sum())).astype(np.int64)


def noisy_categorical_histogram(cells: np.ndarray, col: Column, ledger, sigma, rng) -> CategoricalHistogram:
    """The Gaussian release of :func:`categorical_cells` (wherever they were counted)."""
    spend_metadata(ledger, sigma, f"histogram {col.name}", bins=len(col.categories) + 1)
    noisy = gaussian_counts(np.asarray(cells), sigma=sigma, rng=rng)
    hist = CategoricalHistogram(col.categories, np.clip(noisy[:-1], 0, None),
                                _missing_mass(float(noisy[-1]), sigma) if col.nullable else 0.0,
                                noisy=noisy[:-1] if sigma > 0 else None)
    return with_row_total(hist, noisy, sigma)  # every row lies in one cell: its category (or "other"), or missing


def _missing_mass(noisy: float, sigma: float) -> float:
    """The noisy missing count, read as 0 below 2 noise sd (post-processing): a nullable column without missing
    values must not get ~0.4 sigma of missing mass from clipped noise (models would emit that many missing cells:
    1.4% of a column with none, on a 45k-row table)."""
    return noisy if noisy >= 2.0 * sigma else 0.0


def _public_schema_stats(data, schema: Schema, ledger, share, rng) -> DPMetadata:
    cells = {col.name: categorical_cells(data[col.name], col) if col.is_discrete
             else numeric_cells(data[col.name], col, public_grid(col)) for col in schema.columns}
    return public_schema_release(len(data), cells, schema, ledger, share, rng,
                                 count_cells=lambda col, edges: numeric_cells(data[col.name], col, edges))


def public_schema_release(n_rows: int, cells: dict[str, np.ndarray], schema: Schema, ledger, share, rng, *,
                          count_cells) -> DPMetadata:
    """The metadata phase with a public schema, from exact counts (a noisy row count, then each column's
    histogram in schema order, then the zooms: :func:`release_zooms`): the one place its noise is added, whether
    pandas or an SQL engine counted. ``count_cells(col, edges)``: the exact cells of :func:`numeric_cells`
    on ``edges``, counted where the rows are (the zoom queries). The same counts and seed give the same release."""
    n_zoomable = sum(map(zooms, schema.columns))
    sigma = _sigma(ledger, len(schema) + 1, share, reserve=n_zoomable)
    spend_metadata(ledger, sigma, "row count")
    noisy_n = max(1.0, float(gaussian_counts(np.array([n_rows]), sigma=sigma, rng=rng)[0]))
    n_sd = sigma
    hists = {}
    for col in schema.columns:
        if col.is_discrete:
            hists[col.name] = noisy_categorical_histogram(cells[col.name], col, ledger, sigma, rng)
        else:
            hists[col.name] = noisy_numeric_histogram(cells[col.name], col, public_grid(col), ledger, sigma, rng)
    release_zooms(hists, schema.columns, count_cells, ledger, sigma, lambda n: _rest_sigma(ledger, n, share), rng)
    return released_metadata(noisy_n, n_sd, hists, sigma, non_private=ledger.non_private)


def released_metadata(n_rows: float, n_sd: float, hists: dict, sigma: float, *, non_private: bool = False
                      ) -> DPMetadata:
    """The metadata phase's release, its DP row count the row-count query ``n_rows`` (noise sd ``n_sd``) pooled with
    the row totals of the histograms that count every row (:func:`~dpsynth.data.metadata.pooled_count`; a partition
    selection's do not): post-processing of DP outputs, which every model then reads (sample size, sampling rates)."""
    n, sd = pooled_count([(n_rows, n_sd)] + [(h.row_total, h.row_total_sd) for h in hists.values()
                                              if h.row_total is not None])
    return DPMetadata(max(1.0, n), hists, non_private=non_private, sigma=sigma, n_rows_sd=sd)


# ---------------------------------------------------------------------------------------------- DP discovery
_NUMERIC_TYPES = ("integer", "float")


class FrameColumns:
    """What DP discovery reads of a table, for a pandas frame. An SQL engine's table offers the same methods
    (:class:`dpsynth.marginals.tables.SQLColumns`), so one discovery (:func:`discover`) serves both, and the same
    counts give the same release.

    ``column_type``, ``nullable`` and ``dtype`` read the frame's dtypes (public structure, never a value). Every
    other method returns exact counts that discovery adds noise to, each the answer of one query of L2 sensitivity
    1 under add/remove-one-row (module docstring)."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.names = list(frame.columns)

    def row_count(self) -> int:
        return len(self.frame)

    def column_type(self, name) -> str | None:
        """"bool", "integer", "float" or "text" (None: a type no model represents; pandas has none: any other
        dtype is read as text)."""
        dtype = self.frame[name].dtype
        if pd.api.types.is_bool_dtype(dtype):
            return "bool"
        if pd.api.types.is_integer_dtype(dtype):
            return "integer"
        return "float" if pd.api.types.is_numeric_dtype(dtype) else "text"

    def nullable(self, name) -> bool:
        """Text can always hold a missing value; other columns as their dtype says (NumPy int and bool cannot)."""
        return self.column_type(name) == "text" or _can_hold_missing(self.frame[name])

    def dtype(self, name) -> str | None:
        return _dtype(self.frame[name])

    def decade_cells(self, name) -> np.ndarray:
        """The decade counts of the non-zero numbers (:func:`geometric_grid`), then the count of exact zeros."""
        values = self.frame[name].to_numpy(dtype=float, na_value=np.nan)
        if np.isinf(values).any():
            raise InputError(f"Column '{name}' holds infinite values; replace them or mark them missing.")
        present = values[~np.isnan(values)]
        zero = present == 0
        counts, _, _ = numeric_counts(present[~zero], geometric_grid(), ())
        return np.append(counts, zero.sum())

    def value_counts(self, name) -> tuple[dict, int]:
        """({value: rows} of the present values, number of missing cells)."""
        series = self.frame[name]
        return series.dropna().value_counts(sort=False).to_dict(), int(series.isna().sum())

    def frequent_mass(self, name, cut: float) -> tuple[float, int]:
        """(sum over values of max(rows - cut, 0), number of missing cells): the cells of :func:`profile_counts`."""
        counts, missing = self.value_counts(name)
        return float(np.clip(np.fromiter(counts.values(), float, len(counts)) - cut, 0, None).sum()), missing

    def step_cells(self, name) -> np.ndarray:
        return step_classes(self.frame[name].to_numpy(dtype=float, na_value=np.nan))

    def numeric_cells(self, col: Column, edges) -> np.ndarray:
        return numeric_cells(self.frame[col.name], col, edges)

    def categorical_cells(self, col: Column) -> np.ndarray:
        return categorical_cells(self.frame[col.name], col)


def _discover(data: pd.DataFrame, ledger: PrivacyLedger, share: float, rng, target: str | None = None
              ) -> tuple[Schema, DPMetadata]:
    return discover(FrameColumns(data), ledger, share, rng, target=target)


def discover(source, ledger: PrivacyLedger, share: float, rng, *, target: str | None = None
             ) -> tuple[Schema, DPMetadata]:
    """DP discovery with public column types, on a :class:`FrameColumns` or an engine's
    :class:`~dpsynth.marginals.tables.SQLColumns`. Stage 1: row count, numeric bounds, text profiles. Stage 2: one
    histogram (numeric shape, bool counts, or partition selection) per column still in, at the sigma the remaining
    budget allows (a declared ``target``'s at its larger weight: :func:`plan_discovery`)."""
    plan = plan_for_ledger(source, ledger, share, "public", target)
    alloc = Allocation(ledger, share, plan)
    n_sd = alloc.sigma()
    n_rows = noisy_row_count(source, alloc, n_sd, rng)
    check_feasible(plan, n_rows)
    pending: dict[str, Column | str] = {}  # column name -> its bounded Column (numeric) or its kind (text, bool)
    for name in source.names:
        kind = source.column_type(name)
        if kind is None:  # the engine's type (a date, a list, ...): public structure, decided before any query
            warn_excluded(str(name), "its type is not a number, text or boolean", "cast it to one of these")
        elif kind == "bool":
            pending[name] = "bool"
        elif kind in _NUMERIC_TYPES:
            col = numeric_bounds(source, name, alloc, alloc.sigma(), rng)
            if col is not None and kind == "float":
                col = release_step(str(name), source.step_cells(name), col, alloc, alloc.sigma(W_STEP), rng)
            if col is not None:
                pending[name] = col
        elif plan is None or str(name) == target or profile_counts(
                str(name), *source.frequent_mass(name, plan.profile_cut), n_rows, alloc, plan, rng):
            pending[name] = "text"  # a declared target skips the profile: it is wanted, whatever its values
    n_text = sum(kind == "text" for kind in pending.values())
    alloc.hold_reserve(pending)
    # the target's reserve may pay for a second partition selection: one more share of the selections' delta
    selection_delta = ledger.target_delta / 4 / max(n_text + (alloc.target is not None), 1)

    def release(name, what, col_sigma: float, note: str):
        if isinstance(what, Column):
            edges = public_grid(what)
            return what, noisy_numeric_histogram(source.numeric_cells(what, edges), what, edges, alloc, col_sigma,
                                                 rng)
        if what == "bool":
            col = Column(str(name), "binary", nullable=source.nullable(name), categories=(False, True),
                         dtype=source.dtype(name))
            return col, noisy_categorical_histogram(source.categorical_cells(col), col, alloc, col_sigma, rng)
        key_counts, missing = source.value_counts(name)
        return select_categories(str(name), key_counts, missing, n_rows, alloc, col_sigma,
                                 selection_threshold(col_sigma, selection_delta), selection_delta, rng,
                                 nullable=source.nullable(name), dtype=source.dtype(name), note=note)

    columns, hists, sigma = release_stage_two(pending, alloc, release, zooms_held=sum(
        isinstance(what, Column) and zooms(what) for what in pending.values()))
    if not columns:
        raise InputError("DP discovery found no usable column; declare a schema.")
    release_zooms(hists, columns, source.numeric_cells, alloc, sigma, alloc.stage_two, rng)
    return discovered_schema(source.names, columns, hists, target), released_metadata(n_rows, n_sd, hists, sigma)


def target_short(col: Column | None) -> bool:
    """Whether a release of the declared target misses a class: nothing released, fewer than two classes, or an
    "other" slot (the DP row count exceeds the released counts by more than ``OTHER_Z`` noise sds). Reads the
    release only (DP outputs)."""
    if col is None:
        return True
    return col.other is not None or sum(c != col.other for c in col.categories or ()) < 2


def release_stage_two(pending: dict, alloc: Allocation, release, *, zooms_held: int) -> tuple[list, dict, float]:
    """Stage 2: one release per column of ``pending`` (``release(name, what, sigma, note)`` -> (Column or None,
    histogram or None), ``note`` appended to its ledger label). Returns the released columns, their histograms and
    the weight-1 sigma of the columns other than a declared target.

    A declared text target (:meth:`Allocation.hold_reserve`) goes first, at the weight-1 sigma calibrated with its
    reserve held. If that release misses a class (:func:`target_short`), the reserve pays for a second release at
    :meth:`Allocation.reserve_sigma`, which replaces the first (and the first's warnings are dropped: only the
    release kept speaks). Either way the reserve is then let go and the other columns' sigma recalibrated on the
    phase's recorded events, so a reserve not needed goes to them. Each choice reads DP outputs only (the first
    release, the recorded events), and Gaussians whose sigmas are chosen from earlier outputs keep the phase's total
    (fully adaptive composition, :class:`Allocation`). The target's histogram records its own sigma."""
    sigma = alloc.stage_two(len(pending), reserve=zooms_held)
    target = alloc.target
    columns, hists = [], {}
    for name in sorted(pending, key=lambda name: name != target):  # the target first: its release decides the rest
        if name != target:
            col, hist = release(name, pending[name], sigma, "")
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                col, hist = release(name, pending[name], sigma, "")
            own = sigma
            if target_short(col):
                own = alloc.reserve_sigma(sigma)
                col, hist = release(name, pending[name], own, " (the target's reserve)")
            else:
                for w in caught:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            alloc.release_reserve()
            sigma = alloc.stage_two(len(pending) - 1, reserve=zooms_held)
            if hist is not None:
                hist = replace(hist, sigma=own)
        if col is not None:
            columns.append(col)
            hists[col.name] = hist
    return columns, hists, sigma


def discovered_schema(names, columns: list[Column], hists: dict, target: str | None) -> Schema:
    """The schema DP discovery releases: ``columns`` (those with a histogram), the others excluded, and the declared
    ``target`` when it was released. A target excluded, or released with fewer than two classes, is warned about
    (read off the released schema and histograms: DP outputs only, DESIGN.md §1 rule 8); the fit goes on."""
    excluded = tuple(str(name) for name in names if str(name) not in hists)
    if target is not None and target not in hists:
        warnings.warn(f"The target column '{target}' was not released at this budget (see the warning above); the "
                      "fit goes on without a target. Declare its categories in a schema, or raise epsilon or "
                      "--metadata-share.", stacklevel=4)
        target = None
    elif target is not None:
        col = next(c for c in columns if c.name == target)
        classes = [c for c in (col.categories or ()) if c != col.other]
        if col.is_discrete and len(classes) < 2:
            warnings.warn(f"The target column '{target}' has {len(classes)} class(es) released at this budget (rarer "
                          "classes were below the release threshold): a model trained on the synthetic data cannot "
                          "predict the others. Declare its categories in a schema, or raise epsilon or "
                          "--metadata-share.", stacklevel=4)
    return Schema(tuple(columns), target=target, provenance="dp", excluded=excluded)


def profile_counts(name: str, mass: float, missing: int, n_rows: float, alloc: Allocation, plan: DiscoveryPlan,
                   rng) -> bool:
    """Stage 1 for a text column: is any value frequent enough to be worth a partition selection?

    One Gaussian query (weight ``W_PROFILE``) of two cells: the *frequent mass* ``sum_v max(c_v - t, 0)`` over the
    column's values v with counts c_v, t = ``plan.profile_cut`` (a public number), and the missing count. Adding or
    removing one row changes one value's count by 1, so the frequent mass by at most 1, or the missing count by 1,
    never both: L2 sensitivity 1. An identifier, free text, dates stored as text, or a column (almost) all missing
    have no frequent mass; their noisy mass stays under ``PROFILE_Z`` noise sds and the column is excluded here,
    before it costs a histogram (its budget goes to the other columns in stage 2). A column with a value at the
    release threshold has a mass of 3/4 of it (about 4 noise sds of a weight-1 query, 2 of this one): kept, mostly."""
    sigma = alloc.sigma(W_PROFILE)
    spend_metadata(alloc, sigma, f"profile {name}", bins=2, cut=round(plan.profile_cut, 1))
    noisy_mass, noisy_missing = gaussian_counts(np.array([mass, float(missing)]), sigma=sigma, rng=rng)
    if noisy_mass >= PROFILE_Z * sigma:
        return True
    warn_excluded(name, exclusion_reason(noisy_missing, sigma, n_rows, plan.category_rows),
                  "declare its categories in a schema")
    return False


def select_categories(name: str, key_counts: dict, n_missing: int, n_rows, ledger, sigma, threshold,
                      selection_delta, rng, *, nullable: bool, dtype: str | None, note: str = ""):
    """Gaussian partition selection of a text column's values, with its missing count: (Column, histogram), or
    (None, None) when no value is released (warned). ``key_counts``: {value: rows} of the present values. Without
    noise (the non-private mode, where every value would be kept) an ID-like column is excluded by the rule of
    :func:`~dpsynth.data.inference.infer_schema`."""
    if sigma == 0 and len(key_counts) > max(50, ID_LIKE_RATIO * n_rows):
        warn_excluded(name, "its values are nearly all distinct (ID-like)", "declare its categories in a schema")
        return None, None
    ledger.spend(count_event(sigma), phase=PHASE, mechanism=f"partition selection {name}{note}",
                 extra_delta=selection_delta, sensitivity=1.0, sigma=sigma, threshold=threshold)
    # the values in a fixed order, so each value's noise draw does not depend on row order or on the engine
    key_counts = dict(sorted(key_counts.items(), key=lambda kv: (str(type(kv[0])), str(kv[0]))))
    kept = gaussian_partition_selection(key_counts, sigma=sigma, threshold=threshold, rng=rng)
    missing = max(0.0, float(gaussian_counts(np.array([n_missing]), sigma=sigma, rng=rng)[0]))
    if not kept:
        warn_excluded(name, exclusion_reason(missing, sigma, n_rows, threshold), "declare its categories in a schema")
        return None, None
    cats = sorted(kept, key=lambda v: (str(type(v)), str(v)))
    counts = [kept[c] for c in cats]
    other = None
    # Rows whose value was not released are never dropped. Their number is estimated without another query: the
    # DP row count minus the released counts (post-processing; the noise of len(kept) + 2 counts). When that
    # residual clears OTHER_Z of its noise, they get an explicit "other" category; when it does not (a yes/no
    # column, say), a slot would hold mass the counts cannot tell from zero, so the column stays as released and
    # any such rows are read as missing (the column is nullable).
    residual = n_rows - sum(kept.values()) - missing
    if OTHER not in kept and (residual > OTHER_Z * sigma * math.sqrt(len(kept) + 2) or not nullable):
        cats.append(OTHER)
        counts.append(max(0.0, residual))
        other = OTHER
    cats = [c.item() if isinstance(c, np.generic) else c for c in cats]
    kind = "binary" if len(cats) == 2 else "categorical"
    col = Column(name, kind, nullable=nullable, categories=tuple(cats), other=other,
                 unknown_as_missing=other is None and nullable, dtype=dtype)
    return col, CategoricalHistogram(tuple(cats), np.clip(np.array(counts, dtype=float), 0, None),
                                     _missing_mass(missing, sigma) if nullable else 0.0)


def _numeric_bounds(series: pd.Series, ledger, sigma: float, rng) -> Column | None:
    """:func:`numeric_bounds` of a pandas column."""
    return numeric_bounds(FrameColumns(series.to_frame()), series.name, ledger, sigma, rng)


def numeric_bounds(source, name, ledger, sigma: float, rng) -> Column | None:
    """Stage 1 for a numeric column: kind and bounds from a noisy decade histogram (None: excluded, warned)."""
    key, name = name, str(name)
    cells = source.decade_cells(key)
    spend_metadata(ledger, sigma, f"DP bounds {name}", bins=len(cells))
    noisy = gaussian_counts(cells, sigma=sigma, rng=rng)
    zero_count = float(noisy[-1]) if noisy[-1] >= noise_floor(sigma, noisy) else 0.0
    integral = source.column_type(key) == "integer"
    bins = floored_counts(noisy[:-1], sigma, zero_kept=zero_count > 0, integral=integral)
    if bins.sum() + zero_count <= 0:
        warn_excluded(name, f"too few non-missing values to bound under DP (at this budget a decade of values "
                      f"needs about {noise_floor(sigma, noisy):.0f} rows)", "declare its bounds in a schema")
        return None
    edges = geometric_grid()
    lower, upper = dp_bounds(bins, zero_count, edges)
    if integral:
        lower, upper = math.floor(lower), math.ceil(upper)
    mixed = bins.sum() > 0 and zero_count >= MIXED_ZERO_SHARE * (bins.sum() + zero_count) and lower <= 0 <= upper
    kind = "mixed" if mixed else ("integer" if integral else "continuous")
    return Column(name, kind, nullable=source.nullable(key), lower=lower, upper=upper,
                  special_values=(0.0,) if mixed else (), integer_valued=integral and mixed, dtype=source.dtype(key))


def step_classes(values) -> np.ndarray:
    """The cells of a step query (:func:`release_step`): for each candidate of ``STEP_CANDIDATES`` (coarsest first),
    the number of present values whose coarsest candidate step is that one, then the values that are a multiple of
    none (missing and infinite values count nowhere). Each value falls in one cell: L2 sensitivity 1 under
    add/remove-one-row. A value is a multiple of c when ``q = value / c`` is within 1e-6 (plus 1e-14 of ``|q|``)
    of a whole number, so decimals computed in floating point (0.1 + 0.2) count as their decimal; an SQL engine
    counts the same cells with :func:`step_class_sql`."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    cls = np.full(len(values), len(STEP_CANDIDATES))
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(len(STEP_CANDIDATES) - 1, -1, -1):  # finest first, so the coarsest match is the last written
            q = values / STEP_CANDIDATES[k]
            cls[np.abs(q - np.round(q)) <= 1e-6 + 1e-14 * np.abs(q)] = k
    return np.bincount(cls, minlength=len(STEP_CANDIDATES) + 1)


def step_class_sql(x: str) -> str:
    """An SQL expression (DuckDB and Spark) of the cell :func:`step_classes` puts the number ``x`` in (NULL, NaN and
    infinite numbers: -1, counted nowhere)."""
    branches = []
    for k, c in enumerate(STEP_CANDIDATES):
        q = f"({x} / CAST({c!r} AS DOUBLE))"
        branches.append(f"WHEN abs({q} - round({q})) <= 1e-06 + 1e-14 * abs({q}) THEN {k}")
    return (f"CASE WHEN {x} IS NULL OR isnan({x}) OR abs({x}) = CAST('Infinity' AS DOUBLE) THEN -1 "
            + " ".join(branches) + f" ELSE {len(STEP_CANDIDATES)} END")


def release_step(name: str, cells: np.ndarray, col: Column, ledger, sigma: float, rng) -> Column:
    """Stage 1 for a column of non-integer numbers (float dtype, or a text column found to hold them): its
    ``step``, the coarsest of ``STEP_CANDIDATES`` (King County's floors 0.5, bathrooms 0.25, latitude 0.0001, a
    float column of whole numbers 1) whose multiples hold all but a few of its values, or none.

    One Gaussian count query of :func:`step_classes`' cells at noise sd ``sigma`` (weight ``W_STEP`` for a float
    column; with private dtypes a share of the columns' ``STEP_RESERVE``). Post-processing decides (:func:`dp_step`):
    for each candidate s, coarsest first, the rows off its multiples are the cells of the classes that are not
    multiples of s (the candidate set is closed under least common multiples) and the last cell; s is taken when
    none of them clears the noise floor and their sum is small. The step then shapes the column's histogram (one bin
    a multiple over short ranges) and rounds sampled values to its multiples
    (:attr:`dpsynth.data.schema.Column.step`)."""
    spend_metadata(ledger, sigma, f"DP step {name}", bins=len(cells))
    noisy = gaussian_counts(np.asarray(cells, float), sigma=sigma, rng=rng)
    return replace(col, step=dp_step(noisy, sigma, col.lower, col.upper))


def dp_step(noisy: np.ndarray, sigma: float, lower: float, upper: float) -> float | None:
    """The step :func:`release_step` takes from the noisy cells of its query (post-processing), or None.

    A cell is seen when it clears the noise floor (:func:`noise_floor`). No step is decided when that floor is above
    ``STEP_SHARE`` of the column's noisy count (the budget cannot see a class of that size). Else the step is the
    coarsest candidate s none of whose off cells (the classes that are not multiples of s, and the last cell) is
    seen and whose off cells sum to at most ``STEP_SHARE`` of the count plus 2 noise sds of that sum (mass spread
    thinly over many classes), with two of its multiples inside the bounds."""
    noisy = np.asarray(noisy, float)
    total = float(noisy.sum())
    floor = noise_floor(sigma, noisy)
    if total <= 0 or floor > STEP_SHARE * total:
        return None
    for s in STEP_CANDIDATES:
        off = [k for k, c in enumerate(STEP_CANDIDATES) if abs(c / s - round(c / s)) > 1e-9] + [len(STEP_CANDIDATES)]
        if (noisy[off] >= floor).any() or noisy[off].sum() > STEP_SHARE * total + 2.0 * sigma * math.sqrt(len(off)):
            continue
        if math.floor(upper / s + 1e-9) - math.ceil(lower / s - 1e-9) >= 1:  # two multiples inside the bounds
            return s
    return None


def noise_floor(sigma: float, noisy: np.ndarray) -> float:
    """A count that pure noise on any of the ``len(noisy)`` bins exceeds with probability ``_SPURIOUS``; without
    noise (the non-private mode), one half: a cell with one row clears it, an empty one does not."""
    if sigma == 0:
        return 0.5
    return sigma * float(norm.isf(_SPURIOUS / len(noisy)))


def floored_counts(noisy: np.ndarray, sigma: float, *, zero_kept: bool, integral: bool) -> np.ndarray:
    """Post-processing of the noisy decade counts: bins below the floor are empty, with two exceptions that need
    only 2 sigma because a spurious bin there costs little:

    - the bin next to a kept bin *on the side of zero*: a spurious one moves a bound one decade towards 0 (e.g.
      [10, 100] -> [1, 100]), which clips no row and barely changes the shape grid. (Moving a bound a decade
      outwards would stretch that grid tenfold, so the outer side keeps the strict floor.)
    - for integer columns with kept zeros, the decades [1, 10) and [-10, -1): nothing can lie between them and 0,
      so they are the zero's neighbours (a 0/1 column with 10% ones must not be bounded to [0, 0])."""
    strict = noisy >= noise_floor(sigma, np.append(noisy, 0.0))
    zero_at = len(noisy) // 2  # bins[:zero_at] negative decades (ascending), bins[zero_at] around 0, then positive
    near = np.zeros_like(strict)
    near[zero_at:-1] |= strict[zero_at + 1:]  # positive side: the next smaller decade
    near[1:zero_at + 1] |= strict[:zero_at]  # negative side: the next decade closer to 0
    if integral and zero_kept:
        edges = geometric_grid()
        near[np.searchsorted(edges, 1.0)] = near[np.searchsorted(edges, -1.0) - 1] = True
    kept = np.where(strict | (near & (noisy >= 2.0 * sigma)), noisy, 0.0)
    return _main_runs(kept, 2.0 * noise_floor(sigma, np.append(noisy, 0.0)))


def _main_runs(kept: np.ndarray, min_mass: float) -> np.ndarray:
    """The contiguous runs of non-empty decades that carry real mass: the largest run, and every other run whose
    noisy mass is at least ``min_mass`` (twice the floor) and ``TAIL`` of the total. A bin that clears the floor
    by chance (1% per column) lies, almost always, decades away from the data and barely above the floor; left in,
    it would set a bound of 1e9. Real mass in separate runs is kept: a symmetric column (a standard normal has
    almost nothing in |x| < 0.01, so its negative and positive decades form two runs) or values near -1e308, 1 and
    +1e308 (beyond the grid, they count in its outermost decades). Exact zeros are counted apart from this grid, so
    a mixed column's zeros never break a run."""
    if not kept.any():
        return kept
    nonzero = kept > 0
    starts = np.flatnonzero(nonzero & ~np.r_[False, nonzero[:-1]])
    ends = np.flatnonzero(nonzero & ~np.r_[nonzero[1:], False])
    masses = np.array([kept[a:b + 1].sum() for a, b in zip(starts, ends)])
    threshold = max(min_mass, TAIL * float(masses.sum()))
    out = np.zeros_like(kept)
    for k, (a, b) in enumerate(zip(starts, ends)):
        if k == int(np.argmax(masses)) or masses[k] >= threshold:
            out[a:b + 1] = kept[a:b + 1]
    return out


def exclusion_reason(noisy_missing: float, sigma: float, n_rows: float, threshold: float) -> str:
    """Why no value of a text column was released, read off DP outputs only (the noisy missing count and its noise
    sd, the DP row count) and the public release threshold.

    "(almost) all missing" needs a missing count that clears 2 noise sds as well as leaving fewer present rows than
    the threshold: on a table not much larger than the threshold the second test alone holds for any missing count
    above zero, and a complete column (a 0-7 score on 944 rows, say) was called missing. A table under twice the
    threshold is named as the cause: at most one value could have been released from it."""
    if noisy_missing > n_rows - threshold and noisy_missing > 2 * sigma:
        return "(almost) all its values are missing (a DP estimate)"
    if n_rows < 2 * threshold:
        return (f"the table is too small for DP discovery of its values at this budget (a value needs about "
                f"{threshold:.0f} rows; the table has about {max(n_rows, 0):.0f}, a DP estimate)")
    return (f"no value is frequent enough to release under DP (ID-like or too rare: at this budget a value needs "
            f"about {threshold:.0f} rows)")


def warn_excluded(name: str, why: str, schema_fix: str) -> None:
    """One warning per column that discovery leaves out: which, why (public facts and DP outputs only) and what
    would keep it. The fit goes on with the other columns (``Schema.excluded`` lists this one)."""
    warnings.warn(f"Column '{name}' is excluded: {why}. To keep it, {schema_fix}, or raise --metadata-share "
                  "(metadata_share) or epsilon.", stacklevel=5)


def _can_hold_missing(series: pd.Series) -> bool:
    """Nullable from the dtype (public structure), never from whether this data has a missing value."""
    dtype = series.dtype
    return pd.api.types.is_float_dtype(dtype) or isinstance(dtype, pd.api.extensions.ExtensionDtype)


def dp_bounds(bins: np.ndarray, zero_count: float, edges: np.ndarray) -> tuple[float, float]:
    """Grid edges of the bins holding the TAIL and 1-TAIL quantiles of the (floored, noisy) mass, zero included.

    Bins in value order: the negative decades, the bin around 0, exact zeros (a point), the positive decades."""
    zero_at = int(np.searchsorted(edges, 0.0))  # edges[zero_at - 1] = -1e-3 < 0 < edges[zero_at] = 1e-3
    left = np.concatenate([edges[:-1][:zero_at], [0.0], edges[:-1][zero_at:]])
    right = np.concatenate([edges[1:][:zero_at], [0.0], edges[1:][zero_at:]])
    mass = np.concatenate([bins[:zero_at], [zero_count], bins[zero_at:]])
    cdf = np.cumsum(mass) / mass.sum()
    lo = int(np.searchsorted(cdf, TAIL, side="left"))
    hi = int(np.searchsorted(cdf, 1 - TAIL, side="left"))
    return float(left[lo]), float(right[min(hi, len(right) - 1)])


def _dtype(series: pd.Series) -> str | None:
    from dpsynth.data.schema import DTYPES

    name = str(series.dtype)
    return name if name in DTYPES else None
