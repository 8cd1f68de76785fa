"""dpsynth: differentially private synthetic data, with one honest privacy ledger per model."""

from __future__ import annotations

__version__ = "0.1.0"

from dpsynth.errors import (  # noqa: E402
    BudgetExceededError,
    DPSynthError,
    InputError,
    ModelFileError,
    NotFittedError,
    PrivacyError,
    SchemaError,
)

__all__ = [
    "__version__",
    "Column",
    "Schema",
    "DPSynthError",
    "InputError",
    "SchemaError",
    "PrivacyError",
    "BudgetExceededError",
    "NotFittedError",
    "ModelFileError",
    "available_models",
    "get_model_class",
    "load_model",
    "assess_risk",
    "evaluate",
]

# Imported on first use so that ``import dpsynth`` stays light (no pandas, no torch, no scikit-learn): ``dpsynth
# info`` and ``--help`` start in a fraction of a second.
_LAZY = {
    "Column": "dpsynth.data.schema",
    "Schema": "dpsynth.data.schema",
    "available_models": "dpsynth.models",
    "get_model_class": "dpsynth.models",
    "load_model": "dpsynth.models",
    "assess_risk": "dpsynth.attacks",
}


def __getattr__(name: str):
    import importlib

    if name == "evaluate":
        # the callable module dpsynth.evaluate: dpsynth.evaluate(real, synthetic, ...) and dpsynth.evaluate.write_report
        return importlib.import_module("dpsynth.evaluate")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpsynth' has no attribute {name!r}")
