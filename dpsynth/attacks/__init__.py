"""Privacy attacks on synthetic data and empirical audits (DESIGN.md §4 "Privacy risk", §1 rule 7).

- one call: :func:`assess_risk` -> :class:`RiskResult` (``.table``, ``.summary``, ``.to_json()``,
  ``.to_html_section()``);
- attacks (``Attack(...).evaluate() -> Result``): membership (:class:`ClosestDistanceHamming`,
  :class:`ClosestDistanceL2`, :class:`DensityMIA`, :class:`GanLeaksMIA`, shadow-model
  :class:`GroundhogAttack`), attribute inference (:class:`LinearRegressionAttributeAttack`,
  :class:`NearestNeighbourAttributeAttack`), :class:`SinglingOutRisk`, :class:`LinkabilityRisk` (anonymeter);
- audit: :func:`audit_model` -> :class:`ModelAudit` (eps lower bound next to the ledger's epsilon, in-out over
  many fits or one-run with tagged canaries, and a verdict that says when the audit could not detect a violation);
- executors for the parallel parts: :class:`LocalExecutor` (default, 2 processes), :class:`SequentialExecutor`.

Names are imported lazily so ``import dpsynth.attacks`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Attack",
    "ClosestDistanceHamming",
    "ClosestDistanceL2",
    "DensityMIA",
    "Estimate",
    "GanLeaksMIA",
    "GroundhogAttack",
    "InferenceRisk",
    "LinearRegressionAttributeAttack",
    "LinkabilityRisk",
    "LocalExecutor",
    "ModelAudit",
    "ModelFactory",
    "NearestNeighbourAttributeAttack",
    "Result",
    "RiskResult",
    "SequentialExecutor",
    "ShadowConfig",
    "SinglingOutRisk",
    "assess_risk",
    "audit_model",
    "clopper_pearson_interval",
    "get_executor",
    "privacy_gain",
    "relative_risk",
    "wilson_interval",
]

_WHERE = {
    "assess_risk": "risk", "RiskResult": "risk",
    "Attack": "base", "Result": "base", "Estimate": "base",
    "ClosestDistanceHamming": "membership", "ClosestDistanceL2": "membership", "DensityMIA": "membership",
    "GanLeaksMIA": "membership",
    "GroundhogAttack": "shadow", "ShadowConfig": "shadow", "ModelFactory": "shadow",
    "LinearRegressionAttributeAttack": "attribute", "NearestNeighbourAttributeAttack": "attribute",
    "SinglingOutRisk": "anonymeter_wrap", "LinkabilityRisk": "anonymeter_wrap", "InferenceRisk": "anonymeter_wrap",
    "audit_model": "audit", "ModelAudit": "audit",
    # the executors live in dpsynth.executor (one parallel API for evaluation and attacks); re-exported here
    "LocalExecutor": "dpsynth.executor", "SequentialExecutor": "dpsynth.executor", "get_executor": "dpsynth.executor",
    "wilson_interval": "stats", "clopper_pearson_interval": "stats", "privacy_gain": "stats",
    "relative_risk": "stats",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        where = _WHERE[name]
        module = where if where.startswith("dpsynth.") else f"dpsynth.attacks.{where}"
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpsynth.attacks' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
