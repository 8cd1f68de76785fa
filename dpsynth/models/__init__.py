"""Generators, registered by name: ``get_model_class("dp-tldm")``, ``load_model(path)``.

Each model module registers its class with :func:`register`; :data:`BUILTIN` names the built-in models, their
modules (imported lazily, the first time a class is asked for, so ``import dpsynth`` and ``dpsynth info`` stay
fast and a broken optional model cannot break the others) and their ledger phases (what ``info`` checks a model
file's events against without importing torch; a test keeps the table equal to the classes).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from dpsynth.errors import InputError

if TYPE_CHECKING:
    from dpsynth.models.base import Synthesizer

__all__ = ["BUILTIN", "register", "get_model_class", "available_models", "model_phases", "load_model",
           "secure_noise_models"]

_REGISTRY: dict[str, type[Synthesizer]] = {}
#: name -> (module, ledger phases) of every built-in model
BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "marginals": ("dpsynth.models.marginals", ("metadata", "marginals")),
    "dp-tldm": ("dpsynth.models.dp_tldm", ("metadata", "vae", "diffusion")),
    "dp-auto-gan": ("dpsynth.models.dp_auto_gan", ("metadata", "autoencoder", "gan")),
    "mst": ("dpsynth.models.mst", ("metadata", "mst")),
    "aim": ("dpsynth.models.aim", ("metadata", "aim")),
    "batch-aim": ("dpsynth.models.batch_aim", ("metadata", "aim")),
    "dtgan-d": ("dpsynth.models.dtgan", ("metadata", "classifier", "gan")),
    "dtgan-g": ("dpsynth.models.dtgan", ("metadata", "classifier", "generator")),
    "dp-sactgan": ("dpsynth.models.dp_sactgan", ("metadata", "classifier", "generator")),
    "dp-ctgan": ("dpsynth.models.dp_ctgan", ("metadata", "gan")),
    "dp-vae": ("dpsynth.models.dp_vae", ("metadata", "vae")),
    "tvae": ("dpsynth.models.dp_vae", ("metadata", "vae")),
    "dp-syn": ("dpsynth.models.dp_syn", ("metadata", "autoencoder", "em")),
    "dp-tabddpm": ("dpsynth.models.dp_tabddpm", ("metadata", "diffusion")),
    "tabddpm": ("dpsynth.models.dp_tabddpm", ("metadata", "diffusion")),
    "pate-gan": ("dpsynth.models.pate_gan", ("metadata", "pate")),
    "pate-ctgan": ("dpsynth.models.pate_ctgan", ("metadata", "pate")),
    "dp-wgan": ("dpsynth.models.dp_wgan", ("metadata", "gan")),
    "dp-gan": ("dpsynth.models.dp_wgan", ("metadata", "gan")),
    "dp-dnn": ("dpsynth.models.dp_dnn", ("metadata", "dnn")),
    "dp-gan-dnn": ("dpsynth.models.dp_dnn", ("metadata", "gan", "dnn")),
    "ctgan": ("dpsynth.models.ctgan", ("metadata", "gan")),
    "ctab-gan-plus": ("dpsynth.models.ctab_gan_plus", ("metadata", "gan")),
    "gaussian-copula": ("dpsynth.models.gaussian_copula", ("metadata", "copula")),
}
_MODULES = tuple(module for module, _ in BUILTIN.values())
_loaded = False


def register(cls: type[Synthesizer]) -> type[Synthesizer]:
    """Class decorator: add a Synthesizer subclass to the registry under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} needs a non-empty class attribute 'name' to be registered.")
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the module exists but one of its imports is missing: a real error
                raise


def available_models() -> list[str]:
    """Built-in models and any registered since (no model module is imported)."""
    return sorted(set(BUILTIN) | set(_REGISTRY))


def secure_noise_models() -> list[str]:
    """The DP models that can fit with ``noise="secure"`` (class flag ``secure_noise``: every mechanism one that
    :mod:`dpsynth.privacy.secure_noise` covers; a non-private baseline draws no noise at all). Imports every model
    module."""
    return [name for name in available_models()
            if get_model_class(name).secure_noise and get_model_class(name).supports_dp]


def model_phases(name: str) -> tuple[str, ...]:
    """The ledger phases of model ``name`` (() for a name this dpsynth does not know)."""
    if name in _REGISTRY:
        return tuple(_REGISTRY[name].phases)
    return BUILTIN[name][1] if name in BUILTIN else ()


def get_model_class(name: str) -> type[Synthesizer]:
    if name in BUILTIN and name not in _REGISTRY:
        importlib.import_module(BUILTIN[name][0])
    if name not in _REGISTRY:
        _load_all()
    if name not in _REGISTRY:
        raise InputError(f"Unknown model '{name}'. Available: {', '.join(sorted(_REGISTRY))}.")
    return _REGISTRY[name]


def load_model(path: str | os.PathLike) -> Synthesizer:
    """Load any dpsynth model file (safetensors + JSON; never executes code from the file)."""
    from dpsynth.models.base import Synthesizer

    return Synthesizer.load(path)
