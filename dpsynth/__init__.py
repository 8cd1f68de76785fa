"""dpsynth: differentially private synthetic data, with one honest privacy ledger per model."""

from __future__ import annotations

__version__ = "0.1.0"

from dpsynth.data.schema import Column, Schema  # noqa: E402
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
]
