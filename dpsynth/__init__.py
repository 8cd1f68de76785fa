"""dpsynth: differentially private synthetic data, with one honest privacy ledger per model.

    from dpsynth import AIM, PrivacyBudget, datasets
    adult = datasets.load("adult")
    model = AIM().fit(adult.train, PrivacyBudget(epsilon=1.0, delta=1e-5), schema=adult.schema)
    synthetic = model.sample()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # what IDEs and type checkers see; at run time the names below are imported on first use
    from dpsynth.attacks import assess_risk
    from dpsynth.data.schema import Column, Schema
    from dpsynth.datasets import Dataset
    from dpsynth.evaluation.core import evaluate
    from dpsynth.models import available_models, get_model_class, load_model
    from dpsynth.models.aim import AIM
    from dpsynth.models.base import Synthesizer
    from dpsynth.models.batch_aim import BatchAIM
    from dpsynth.models.checks import check_synthesizer
    from dpsynth.models.ctab_gan_plus import CTABGANPlus
    from dpsynth.models.ctgan import CTGAN
    from dpsynth.models.dp_auto_gan import DPAutoGAN
    from dpsynth.models.dp_ctgan import DPCTGAN
    from dpsynth.models.dp_dnn import DPDNN, DPGANDNN
    from dpsynth.models.dp_sactgan import DPSACTGAN
    from dpsynth.models.dp_syn import DPSYN
    from dpsynth.models.dp_tabddpm import DPTabDDPM, TabDDPM
    from dpsynth.models.dp_tldm import DPTLDM
    from dpsynth.models.dp_vae import DPVAE, TVAE
    from dpsynth.models.dp_wgan import DPGAN, DPWGAN
    from dpsynth.models.dtgan import DTGANDiscriminator, DTGANGenerator
    from dpsynth.models.gaussian_copula import GaussianCopula
    from dpsynth.models.marginals import Marginals
    from dpsynth.models.mst import MST
    from dpsynth.models.pate_ctgan import PATECTGAN
    from dpsynth.models.pate_gan import PATEGAN
    from dpsynth.privacy.budget import PrivacyBudget

__all__ = [
    "__version__",
    "Synthesizer",
    "Marginals",
    "AIM",
    "MST",
    "BatchAIM",
    "DPTLDM",
    "DPAutoGAN",
    "DTGANDiscriminator",
    "DTGANGenerator",
    "DPSACTGAN",
    "DPCTGAN",
    "DPVAE",
    "DPSYN",
    "DPTabDDPM",
    "TabDDPM",
    "TVAE",
    "GaussianCopula",
    "PATEGAN",
    "PATECTGAN",
    "CTGAN",
    "CTABGANPlus",
    "DPWGAN",
    "DPGAN",
    "DPDNN",
    "DPGANDNN",
    "PrivacyBudget",
    "Dataset",
    "check_synthesizer",
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
    "datasets",
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
    "evaluate": "dpsynth.evaluation.core",
    "Synthesizer": "dpsynth.models.base",
    "Marginals": "dpsynth.models.marginals",
    "AIM": "dpsynth.models.aim",
    "MST": "dpsynth.models.mst",
    "BatchAIM": "dpsynth.models.batch_aim",
    "DPTLDM": "dpsynth.models.dp_tldm",
    "DPAutoGAN": "dpsynth.models.dp_auto_gan",
    "DTGANDiscriminator": "dpsynth.models.dtgan",
    "DTGANGenerator": "dpsynth.models.dtgan",
    "DPSACTGAN": "dpsynth.models.dp_sactgan",
    "DPCTGAN": "dpsynth.models.dp_ctgan",
    "DPVAE": "dpsynth.models.dp_vae",
    "DPSYN": "dpsynth.models.dp_syn",
    "DPTabDDPM": "dpsynth.models.dp_tabddpm",
    "TabDDPM": "dpsynth.models.dp_tabddpm",
    "TVAE": "dpsynth.models.dp_vae",
    "GaussianCopula": "dpsynth.models.gaussian_copula",
    "PATEGAN": "dpsynth.models.pate_gan",
    "PATECTGAN": "dpsynth.models.pate_ctgan",
    "CTGAN": "dpsynth.models.ctgan",
    "CTABGANPlus": "dpsynth.models.ctab_gan_plus",
    "DPWGAN": "dpsynth.models.dp_wgan",
    "DPGAN": "dpsynth.models.dp_wgan",
    "DPDNN": "dpsynth.models.dp_dnn",
    "DPGANDNN": "dpsynth.models.dp_dnn",
    "PrivacyBudget": "dpsynth.privacy.budget",
    "Dataset": "dpsynth.datasets",
    "check_synthesizer": "dpsynth.models.checks",
}


#: sub-packages reachable as attributes after a bare ``import dpsynth`` (``dpsynth.evaluation.write_report``)
_SUBMODULES = ("attacks", "data", "datasets", "evaluation", "graphs", "models", "privacy")


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"dpsynth.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # once imported, a plain attribute
        return value
    raise AttributeError(f"module 'dpsynth' has no attribute {name!r}")
