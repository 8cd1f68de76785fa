"""dpsynth.privacy: everything that touches private rows or accounts for it. Knows nothing about GANs or VAEs.

Stages (one module each): batch selection (``sampling``), per-example gradients (``per_example``), DP-SGD
clipping + noise (``dpsgd``), generator-side gradient sanitizer (``sanitizer``), PATE aggregation (``pate``),
noisy counts (``mechanisms``), accounting (``accounting``, ``calibration``, ``gdp``), the ledger (``ledger``) and
empirical auditing (``audit``). Neighbouring relation throughout: add/remove one record.
"""

from dpsynth.privacy.audit import AuditResult, CanaryAudit, audit_dpsgd, eps_lower_bound_cp, eps_lower_bound_one_run
from dpsynth.privacy.calibration import calibrate_noise, calibrate_steps, dpsgd_event, epsilon
from dpsynth.privacy.dpsgd import DPSGD, DPSGDConfig, validate_module
from dpsynth.privacy.gdp import (
    gdp_delta,
    gdp_epsilon,
    ledger_gdp_report,
    mu_from_separation,
    mu_poisson_clt,
    mu_seed004,
    separation,
)
from dpsynth.privacy.ledger import PrivacyLedger, StepAllowance
from dpsynth.privacy.pate import noisy_argmax, pate_event, teacher_partition, teacher_votes
from dpsynth.privacy.per_example import input_gradient, per_example_grads
from dpsynth.privacy.sampling import PoissonSampler, ShuffleSampler
from dpsynth.privacy.sanitizer import GradientSanitizer

__all__ = [
    "AuditResult",
    "CanaryAudit",
    "DPSGD",
    "DPSGDConfig",
    "GradientSanitizer",
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
