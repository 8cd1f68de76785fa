"""Evaluation of synthetic tables: every utility metric of the five seeds in one call, plus an HTML report.

``evaluate(real_train, synthetic, ...)`` returns an :class:`EvaluationResult` (tidy table + plot data);
``build_report`` / ``write_report`` turn it into one self-contained HTML page; ``evaluate_graph`` scores a
released graph (seed 001). Definitions, with the seed section each comes from, are in the module docstrings:
:mod:`.similarity`, :mod:`.unsupervised`, :mod:`.dimwise`, :mod:`.quality` (with :mod:`.discriminability`),
:mod:`.ml_efficacy`, :mod:`.graph`. :mod:`.risk_section` renders ``dpsynth attack --json`` results in the report.
"""

from __future__ import annotations

import sys
import types

from dpsynth.evaluate.core import GROUPS, Limits, evaluate
from dpsynth.evaluate.graph import degree_distribution, degree_l1_error, edge_ratio, evaluate_graph
from dpsynth.evaluate.report import build_report, write_report
from dpsynth.evaluate.result import EvaluationResult

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


class _CallableModule(types.ModuleType):
    """Lets ``dpsynth.evaluate(real, synthetic, ...)`` (the issue's spelling) call :func:`evaluate`."""

    def __call__(self, *args, **kwargs) -> EvaluationResult:
        return evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
