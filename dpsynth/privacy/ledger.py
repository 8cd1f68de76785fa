"""The privacy ledger: one per model, every access to private rows recorded (DESIGN.md §1 rule 1).

A mechanism that reads private rows calls :meth:`PrivacyLedger.spend` *before* releasing its output; a
training loop takes a :class:`StepAllowance` once and calls :meth:`StepAllowance.take` before each step.
The ledger composes all entries (metadata, every training phase, any DP statistic) into one epsilon at the
target delta with the tightest sound accountant (see :mod:`dpsynth.privacy.accounting`).

Guarantees:
- ``spend`` never records an entry that would take the composed epsilon past the target; it raises
  :class:`~dpsynth.errors.BudgetExceededError` instead, and the ledger is unchanged.
- ``StepAllowance.take`` returns False (and records nothing) once the next step would exceed the target,
  so training stops *before* the target is exceeded, never after.
- A live allowance *reserves* its untaken steps: every later question to the ledger (``spend``, another
  ``allowance``, ``would_exceed``, noise calibration) is answered as if those steps had run. Two training loops on
  one ledger (a critic and a classifier, DP-SGD beside a gradient sanitizer) therefore can never together pass the
  target. ``StepAllowance.release()`` hands the untaken steps back (a loop that ends early calls it).
- A non-private model (``target_epsilon=inf``) records ``NonPrivateDpEvent`` entries; its epsilon is inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from dp_accounting import dp_event

from dpsynth.errors import BudgetExceededError, InputError
from dpsynth.privacy.accounting import (
    EPSILON_MAX,
    PLD_MAX_EPSILON,
    Accountant,
    check_accountant,
    epsilon_of,
    fits,
    largest_count,
)
from dpsynth.privacy.events import describe_event, event_from_dict, event_to_dict

__all__ = ["LedgerEntry", "PrivacyLedger", "StepAllowance", "check_privacy_params", "warn_large_delta"]

NEIGHBOURING = "add/remove one record"


def check_privacy_params(epsilon: float, delta: float, n_rows: int | None = None, *, capped: bool = True) -> None:
    """Validate a privacy target; raise :class:`InputError` with the rule and the value found.

    ``capped``: refuse finite targets above ``EPSILON_MAX`` (what a fit accepts); a bare ledger (audits, tests of
    the accountants) may hold any finite target."""
    if isinstance(epsilon, bool) or isinstance(delta, bool):  # float(True) == 1.0: a typo, never a budget
        raise InputError(f"epsilon and delta must be numbers, not booleans. Found {epsilon!r}, {delta!r}.")
    if isinstance(epsilon, (str, bytes)) or isinstance(delta, (str, bytes)):
        raise InputError(f"epsilon and delta must be numbers, not text. Found {epsilon!r}, {delta!r}.")
    try:
        epsilon = float(epsilon)
        delta = float(delta)
    except (TypeError, ValueError) as exc:
        raise InputError(f"epsilon and delta must be numbers. Found {epsilon!r}, {delta!r}.") from exc
    if math.isnan(epsilon) or epsilon <= 0 or (math.isinf(epsilon) and epsilon < 0):
        raise InputError(f"epsilon must be > 0 and finite (or inf for the non-private mode). Found {epsilon}.")
    if math.isinf(epsilon):
        return
    if capped and epsilon > EPSILON_MAX:
        raise InputError(f"epsilon must be at most {EPSILON_MAX:g}: e^epsilon is then beyond any meaningful guarantee "
                         f"(use inf for the explicit non-private mode). Found {epsilon:g}.")
    if not (0 < delta < 1):
        raise InputError(f"delta must be in (0, 1). Found {delta}.")
    if n_rows is not None:
        warn_large_delta(delta, n_rows)


def warn_large_delta(delta: float, n_rows: float) -> None:
    """Warn when delta > 1/n. In a DP fit, ``n_rows`` must be the DP row count (the message is released)."""
    if n_rows > 0 and delta > 1.0 / n_rows:
        import warnings

        warnings.warn(
            f"delta={delta:g} is larger than 1/n = {1.0 / n_rows:.3g} (n: the DP row count): a mechanism that "
            "publishes one random row would satisfy this guarantee. Use delta << 1/n.",
            stacklevel=3,
        )


@dataclass(frozen=True)
class LedgerEntry:
    """One kind of mechanism run ``count`` times in a phase (``event`` is a single run). Immutable: the ledger
    replaces an entry when more runs are recorded, so an entry handed out can never change under its holder."""

    phase: str
    mechanism: str
    event: dp_event.DpEvent
    count: int = 1
    extra_delta: float = 0.0  # delta consumed by thresholding, per run (see accounting.py)
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "mechanism": self.mechanism,
            "event": event_to_dict(self.event),
            "count": self.count,
            "extra_delta": self.extra_delta,
            "params": self.params,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        return cls(
            phase=str(data["phase"]),
            mechanism=str(data["mechanism"]),
            event=event_from_dict(data["event"]),
            count=int(data["count"]),
            extra_delta=float(data.get("extra_delta", 0.0)),
            params=dict(data.get("params", {})),
        )


class PrivacyLedger:
    """Records privacy events and answers "how much has been spent" and "may I spend this".

    Args:
        target_epsilon: the budget; ``math.inf`` for the non-private mode.
        target_delta: the total delta the guarantee is stated at.
        accountant: ``"best"`` (min of PLD and RDP, both sound), ``"pld"`` or ``"rdp"``.
    """

    def __init__(self, *, target_epsilon: float, target_delta: float, accountant: Accountant = "best"):
        check_privacy_params(target_epsilon, target_delta, capped=False)
        check_accountant(accountant)
        self.target_epsilon = float(target_epsilon)
        self.target_delta = float(target_delta)
        self.accountant: Accountant = accountant
        self.entries: list[LedgerEntry] = []
        self._live: list[StepAllowance] = []  # allowances whose untaken steps are reserved (not serialised)

    # ------------------------------------------------------------------ queries
    @property
    def non_private(self) -> bool:
        return math.isinf(self.target_epsilon)

    def _pairs(self, extra: list[tuple[dp_event.DpEvent, int]] | None = None):
        pairs = [(e.event, e.count) for e in self.entries]
        return pairs + (extra or [])

    def committed_pairs(self) -> list[tuple[dp_event.DpEvent, int]]:
        """(event, count) of every recorded run plus the steps reserved by live allowances.

        Anything that decides whether more may be spent (``would_exceed``, ``max_count``, noise calibration) must
        compose against this, not against :attr:`entries` alone (see the module docstring)."""
        reserved = [(a.entry.event, a.remaining) for a in self._live if a.remaining > 0]
        return self._pairs(reserved)

    def _extra_delta(self, more: float = 0.0) -> float:
        return sum(e.extra_delta * e.count for e in self.entries) + more

    def epsilon(self, accountant: Accountant | None = None) -> float:
        """Epsilon spent so far at the target delta (0 when nothing was recorded)."""
        return epsilon_of(
            self._pairs(), self.target_delta, extra_delta=self._extra_delta(), accountant=accountant or self.accountant
        )

    @property
    def delta(self) -> float:
        return self.target_delta

    def epsilon_if(self, event: dp_event.DpEvent, count: int = 1, extra_delta: float = 0.0) -> float:
        """Epsilon the ledger would show after also running ``event`` ``count`` times (and every reserved step)."""
        return epsilon_of(
            self.committed_pairs() + [(event, count)],
            self.target_delta,
            extra_delta=self._extra_delta(extra_delta * count),
            accountant=self.accountant,
        )

    def would_exceed(self, event: dp_event.DpEvent, count: int = 1, extra_delta: float = 0.0) -> bool:
        if self.non_private:
            return False
        return not fits(
            self.committed_pairs() + [(event, count)],
            self.target_delta,
            self.target_epsilon,
            extra_delta=self._extra_delta(extra_delta * count),
            accountant=self.accountant,
        )

    def max_count(self, event: dp_event.DpEvent, upper: int) -> int:
        """Largest ``k <= upper`` such that running ``event`` k more times stays within the target."""
        if self.non_private:
            return upper
        return largest_count(lambda k: not self.would_exceed(event, k), upper)

    def phases(self) -> dict[str, float]:
        """Epsilon of each phase on its own, at the target delta (the total is not their sum: see epsilon())."""
        out: dict[str, float] = {}
        for phase in dict.fromkeys(e.phase for e in self.entries):
            entries = [e for e in self.entries if e.phase == phase]
            out[phase] = epsilon_of(
                [(e.event, e.count) for e in entries],
                self.target_delta,
                extra_delta=sum(e.extra_delta * e.count for e in entries),
                accountant=self.accountant,
            )
        return out

    def gdp(self) -> dict[str, Any] | None:
        """The Gaussian-DP view of the (subsampled) Gaussian entries — mu by the Poisson CLT and by seed 004's
        formula, and seed 004's separation — or None when there is none (non-private, or no Gaussian entry).
        An approximation shown beside :meth:`epsilon`, never instead of it (see :mod:`dpsynth.privacy.gdp`)."""
        if self.non_private or not any(e.count for e in self.entries):
            return None
        from dpsynth.privacy.gdp import ledger_gdp_report

        report = ledger_gdp_report(self)
        return report if report["entries"] else None

    # ------------------------------------------------------------------ recording
    def spend(
        self,
        event: dp_event.DpEvent,
        *,
        phase: str,
        mechanism: str,
        count: int = 1,
        extra_delta: float = 0.0,
        **params: Any,
    ) -> None:
        """Record ``count`` runs of ``event``; raise BudgetExceededError (recording nothing) if over target."""
        if count < 0:
            raise InputError(f"count must be >= 0. Found {count}.")
        if self.would_exceed(event, count, extra_delta):
            raise BudgetExceededError(
                f"{mechanism} in phase '{phase}' would raise epsilon to "
                f"{self.epsilon_if(event, count, extra_delta):.4g} > target {self.target_epsilon:.4g} "
                f"(delta={self.target_delta:g})."
            )
        self._record(event, phase=phase, mechanism=mechanism, count=count, extra_delta=extra_delta, params=params)

    def _record(self, event, *, phase, mechanism, count, extra_delta, params) -> int:
        """Add ``count`` runs to the entry of this (phase, mechanism, event, extra delta, params), or open one;
        return its index in :attr:`entries`."""
        key = (phase, mechanism, event, extra_delta, params)
        for i, entry in enumerate(self.entries):
            if (entry.phase, entry.mechanism, entry.event, entry.extra_delta, entry.params) == key:
                self.entries[i] = replace(entry, count=entry.count + count)
                return i
        self.entries.append(LedgerEntry(phase, mechanism, event, count, extra_delta, dict(params)))
        return len(self.entries) - 1

    def allowance(
        self, event: dp_event.DpEvent, *, phase: str, mechanism: str, max_steps: int, **params: Any
    ) -> StepAllowance:
        """A step counter for a training loop: ``take()`` records one run of ``event`` if it still fits.

        The number of steps that fit is computed once here (binary search over the composed epsilon, counting the
        steps other live allowances have reserved), so ``take()`` is O(1). Until they are taken or released, the
        allowed steps stay reserved: whatever is asked of the ledger later is answered as if they had run.
        """
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 0:
            raise InputError(f"max_steps must be an integer >= 0. Found {max_steps!r}.")
        allowed = self.max_count(event, max_steps)
        index = self._record(event, phase=phase, mechanism=mechanism, count=0, extra_delta=0.0, params=params)
        allowance = StepAllowance(ledger=self, index=index, allowed=allowed)
        self._live.append(allowance)
        return allowance

    def _release(self, allowance: StepAllowance) -> None:
        self._live = [a for a in self._live if a is not allowance]

    # ------------------------------------------------------------------ forms
    def to_dict(self) -> dict[str, Any]:
        eps = self.epsilon()
        return {
            "neighbouring": NEIGHBOURING,
            "target_epsilon": _json_float(self.target_epsilon),
            "target_delta": self.target_delta,
            "accountant": self.accountant,
            "epsilon": _json_float(eps),
            # PLD is skipped where its cost explodes (accounting's fast path for large epsilons): None then
            "epsilon_pld": (_json_float(self.epsilon("pld")) if eps <= 2 * PLD_MAX_EPSILON else None)
            if self.entries else 0.0,
            "epsilon_rdp": _json_float(self.epsilon("rdp")) if self.entries else 0.0,
            "phases": {k: _json_float(v) for k, v in self.phases().items()},
            "gdp": _gdp_summary(self.gdp()),
            "entries": [e.to_dict() for e in self.entries],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyLedger:
        ledger = cls(
            target_epsilon=float(data["target_epsilon"]),
            target_delta=float(data["target_delta"]),
            accountant=data.get("accountant", "best"),
        )
        ledger.entries = [LedgerEntry.from_dict(e) for e in data.get("entries", [])]
        return ledger

    def __str__(self) -> str:
        eps = self.epsilon()
        lines = [
            f"Privacy ledger ({NEIGHBOURING} neighbours): epsilon = {eps:.4g} of target "
            f"{self.target_epsilon:.4g}, delta = {self.target_delta:g}",
        ]
        phases = self.phases()
        for entry in self.entries:
            lines.append(
                f"  [{entry.phase}] {entry.mechanism}: {entry.count} x {describe_event(entry.event)}"
                + (f", +delta {entry.extra_delta * entry.count:.2g}" if entry.extra_delta else "")
                + (f", {entry.params['budget_share']:.1%} of the phase's budget" if "budget_share" in entry.params
                   else "")
            )
        if len(phases) > 1:
            lines.append("  per phase (each alone): " + ", ".join(f"{k} {v:.4g}" for k, v in phases.items()))
        gdp = self.gdp()  # raw floats (inf prints as inf)
        if gdp is not None:
            missed = gdp["not_covered"]
            listed = ", ".join(missed[:3]) + (f" and {len(missed) - 3} more" if len(missed) > 3 else "")
            partial = f" (not covering {listed})" if missed else ""
            lines.append(
                f"  Gaussian-DP view{partial} (an approximation, not the guarantee): mu = {gdp['mu_clt']:.4g} "
                f"(Poisson CLT), {gdp['mu_seed004']:.4g} (seed 004); separation = {gdp['separation_clt']:.4g} "
                f"(CLT), {gdp['separation_seed004']:.4g} (seed 004)"
            )
        return "\n".join(lines)


@dataclass(eq=False)
class StepAllowance:
    """Handed to a training loop by :meth:`PrivacyLedger.allowance`: ``allowed`` more runs of the event of the
    ledger's entry ``index``; ``take()`` records one run there.

    The entry may already hold runs from an earlier allowance of the same phase and mechanism (a resumed loop):
    this allowance counts only its own steps (``taken``)."""

    ledger: PrivacyLedger
    index: int
    allowed: int
    taken: int = 0
    released: bool = False

    @property
    def entry(self) -> LedgerEntry:
        return self.ledger.entries[self.index]

    @property
    def remaining(self) -> int:
        return 0 if self.released else self.allowed - self.taken

    def take(self) -> bool:
        """Record one step if it fits in the budget; return False (recording nothing) otherwise."""
        if self.remaining <= 0:
            self.release()
            return False
        self.ledger.entries[self.index] = replace(self.entry, count=self.entry.count + 1)
        self.taken += 1
        return True

    def release(self) -> None:
        """Give the untaken steps back to the ledger; later ``take()`` calls return False."""
        if not self.released:
            self.released = True
            self.ledger._release(self)


def _gdp_summary(report: dict[str, Any] | None) -> dict[str, Any] | None:
    keys = ("mu_clt", "mu_seed004", "separation_clt", "separation_seed004", "epsilon_from_mu_clt", "not_covered",
            "note")
    if report is None:
        return None
    return {k: _json_float(report[k]) if isinstance(report[k], float) else report[k] for k in keys}


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else x
