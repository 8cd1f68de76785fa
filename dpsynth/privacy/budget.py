"""The privacy budget of one fit, as one frozen value: ``PrivacyBudget(epsilon, delta, metadata_share)``.

``model.fit(df, PrivacyBudget(1.0, 1e-5))`` and ``model.fit(df, epsilon=1.0, delta=1e-5)`` are the same fit. A value
object rather than three loose floats, so that a budget can be written once, validated once (at construction, one
:class:`~dpsynth.errors.InputError` line naming the field) and passed around (benchmark grids, the CLI, a data
owner's release policy) without any of its parts drifting.

- ``epsilon``: the target of the whole fit — every phase (metadata discovery, training, any DP statistic) composed
  in the model's ledger; ``math.inf`` is the explicit non-private mode.
- ``delta``: the target delta of that composition (``0 < delta < 1``; ignored when ``epsilon`` is inf).
- ``metadata_share``: the fraction of ``epsilon`` that the metadata phase (DP discovery when no public schema is
  given, the DP row count and the DP histograms) may use, in ``(0, 1)``; ``None`` (default) leaves it to the
  model: :attr:`dpsynth.models.base.Synthesizer.default_metadata_share` (0.1, 0.3 for the deep models, whose
  sampled marginals are mapped onto the DP histograms; measured in the README's "Budget splits").
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from dpsynth.errors import InputError

__all__ = ["PrivacyBudget", "DEFAULT_METADATA_SHARE", "as_budget"]

#: fraction of the budget the metadata phase may use, unless the model or the user says otherwise
DEFAULT_METADATA_SHARE = 0.1


@dataclass(frozen=True)
class PrivacyBudget:
    """A validated (epsilon, delta, metadata_share) target; immutable. See the module docstring."""

    epsilon: float
    delta: float
    metadata_share: float | None = None

    def __post_init__(self) -> None:
        from dpsynth.privacy.ledger import check_privacy_params

        check_privacy_params(self.epsilon, self.delta)
        share = self.metadata_share
        if share is not None and (isinstance(share, bool) or not isinstance(share, numbers.Real)
                                  or not (0.0 < float(share) < 1.0)):
            raise InputError(f"metadata_share must be a number in (0, 1), or None for the model's default. "
                             f"Found {share!r}.")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "metadata_share", None if share is None else float(share))

    @property
    def non_private(self) -> bool:
        """True for the explicit non-private mode (``epsilon = inf``)."""
        return math.isinf(self.epsilon)

    def to_dict(self) -> dict[str, float | str | None]:
        return {"epsilon": "inf" if self.non_private else self.epsilon, "delta": self.delta,
                "metadata_share": self.metadata_share}


def as_budget(budget: PrivacyBudget | None = None, *, epsilon: float | None = None, delta: float | None = None,
              metadata_share: float | None = None) -> PrivacyBudget:
    """The budget of a call that takes either a :class:`PrivacyBudget` or its fields as keywords (not both)."""
    loose = {"epsilon": epsilon, "delta": delta, "metadata_share": metadata_share}
    given = [k for k, v in loose.items() if v is not None]
    if budget is not None:
        if not isinstance(budget, PrivacyBudget):
            raise InputError(f"budget must be a PrivacyBudget (or pass epsilon= and delta=). Found {budget!r}.")
        if given:
            raise InputError(f"give the budget once: a PrivacyBudget or {', '.join(given)}=, not both.")
        return budget
    if epsilon is None or delta is None:
        raise InputError("a fit needs a privacy budget: PrivacyBudget(epsilon, delta) or epsilon= and delta=.")
    return PrivacyBudget(epsilon, delta, metadata_share)
