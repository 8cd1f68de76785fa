"""dpsynth.privacy: everything that touches private rows or accounts for it. Knows nothing about GANs or VAEs.

Stages (one module each): batch selection (``sampling``), per-example gradients (``per_example``), DP-SGD
clipping + noise (``dpsgd``), generator-side gradient sanitizer (``sanitizer``), PATE aggregation (``pate``),
noisy counts (``mechanisms``), accounting (``accounting``, ``calibration``, ``gdp``), the ledger (``ledger``) and
empirical auditing (``audit``). Neighbouring relation throughout: add/remove one record.
"""

import importlib
from typing import Any

# Names are imported on first use (PEP 562): ``dpsynth info`` needs the ledger, not torch, so importing the ledger
# must not pull in DP-SGD, the sanitizer or the audits.
_LAZY = {
    "audit": ("AuditResult", "CanaryAudit", "audit_dpsgd", "eps_lower_bound_cp", "eps_lower_bound_one_run"),
    "calibration": ("calibrate_noise", "calibrate_steps", "dpsgd_event", "epsilon"),
    "dpsgd": ("DPSGD", "DPSGDConfig", "validate_module"),
    "gdp": ("gdp_delta", "gdp_epsilon", "ledger_gdp_report", "mu_from_separation", "mu_poisson_clt", "mu_seed004",
            "separation"),
    "ledger": ("PrivacyLedger", "StepAllowance"),
    "pate": ("noisy_argmax", "pate_event", "teacher_partition", "teacher_votes"),
    "per_example": ("input_gradient", "per_example_grads"),
    "ghost": ("GhostClipper", "GhostUnsupported", "ghost_clipped_sum", "rowwise"),
    "sampling": ("PoissonSampler", "ShuffleSampler"),
    "sanitizer": ("GradientSanitizer", "SanitizerConfig"),
    "budget": ("PrivacyBudget",),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"dpsynth.privacy.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpsynth.privacy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "GhostClipper",
    "GhostUnsupported",
    "ghost_clipped_sum",
    "rowwise",
    "AuditResult",
    "CanaryAudit",
    "DPSGD",
    "DPSGDConfig",
    "GradientSanitizer",
    "SanitizerConfig",
    "PrivacyBudget",
    "PoissonSampler",
    "PrivacyLedger",
    "ShuffleSampler",
    "StepAllowance",
    "audit_dpsgd",
    "calibrate_noise",
    "calibrate_steps",
    "dpsgd_event",
    "eps_lower_bound_cp",
    "eps_lower_bound_one_run",
    "epsilon",
    "gdp_delta",
    "gdp_epsilon",
    "input_gradient",
    "ledger_gdp_report",
    "mu_from_separation",
    "mu_poisson_clt",
    "mu_seed004",
    "noisy_argmax",
    "pate_event",
    "per_example_grads",
    "separation",
    "teacher_partition",
    "teacher_votes",
    "validate_module",
]
