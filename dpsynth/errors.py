"""The exceptions dpsynth raises.

Every error a user can cause is an instance of :class:`DPSynthError`, so a caller (and the CLI) can tell a
user mistake, reported in one line, from a bug. Messages state the rule and the value found, e.g.
``epsilon must be > 0 and finite (or inf for the non-private mode). Found -1.``
"""

from __future__ import annotations

__all__ = [
    "DPSynthError",
    "InputError",
    "SchemaError",
    "PrivacyError",
    "BudgetExceededError",
    "NotFittedError",
    "ModelFileError",
]


class DPSynthError(Exception):
    """Base class of every error dpsynth raises on purpose."""


class InputError(DPSynthError, ValueError):
    """Bad user input: an empty frame, an unreadable file, an invalid parameter."""


class SchemaError(InputError):
    """The data does not match the schema, or the schema itself is invalid."""


class PrivacyError(DPSynthError):
    """A request that would break a privacy rule (e.g. a mechanism without a recorded event)."""


class BudgetExceededError(PrivacyError):
    """Running a mechanism would take the ledger past its target (epsilon, delta)."""


class NotFittedError(DPSynthError, RuntimeError):
    """A model was asked to sample or save before ``fit``."""


class ModelFileError(DPSynthError, OSError):
    """A model file is missing, corrupt, or was written by an incompatible version."""
