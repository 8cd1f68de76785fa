"""Evaluation of synthetic tables: every utility metric of the five seeds in one call, plus an HTML report.

``dpsynth.evaluate(real_train, synthetic, ...)`` (the same function as ``dpsynth.evaluation.evaluate``) returns an
:class:`EvaluationResult` (tidy table + plot data); ``build_report`` / ``write_report`` turn it into one
self-contained HTML page; ``evaluate_graph`` scores a released graph (seed 001). Definitions, with the seed section
each comes from, are in the module docstrings:
:mod:`.similarity`, :mod:`.unsupervised`, :mod:`.dimwise`, :mod:`.quality` (with :mod:`.discriminability`),
:mod:`.ml_efficacy`, :mod:`.graph`. :mod:`.risk_section` renders ``dpsynth attack --json`` results in the report.
"""

from __future__ import annotations

import importlib
from typing import Any

# Imported on first use: ``import dpsynth.evaluation`` stays light, so that ``--help`` or ``info`` never pay for pandas
# and scikit-learn.
_WHERE = {
    "GROUPS": "core", "Limits": "core", "evaluate": "core",
    "degree_distribution": "graph", "degree_l1_error": "graph", "edge_ratio": "graph", "evaluate_graph": "graph",
    "build_report": "report", "write_report": "report", "EvaluationResult": "result",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"dpsynth.evaluation.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpsynth.evaluate' has no attribute {name!r}")

__all__ = [
    "GROUPS",
    "Limits",
    "EvaluationResult",
    "evaluate",
    "evaluate_graph",
    "degree_distribution",
    "degree_l1_error",
    "edge_ratio",
    "build_report",
    "write_report",
]

