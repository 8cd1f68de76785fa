"""Generators, registered by name: ``get_model_class("dp-tldm")``, ``load_model(path)``.

Each model module registers its class with :func:`register`; :data:`_MODULES` lists the modules imported
lazily the first time the registry is read (so ``import dpsynth`` stays fast and a broken optional model
cannot break the others).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from dpsynth.errors import InputError

if TYPE_CHECKING:
    from dpsynth.models.base import Synthesizer

__all__ = ["register", "get_model_class", "available_models", "load_model"]

_REGISTRY: dict[str, type[Synthesizer]] = {}
_MODULES = (
    "dpsynth.models.marginals",
    "dpsynth.models.dp_tldm",
    "dpsynth.models.dp_auto_gan",
)
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
    _load_all()
    return sorted(_REGISTRY)


def get_model_class(name: str) -> type[Synthesizer]:
    _load_all()
    if name not in _REGISTRY:
        raise InputError(f"Unknown model '{name}'. Available: {', '.join(sorted(_REGISTRY))}.")
    return _REGISTRY[name]


def load_model(path: str | os.PathLike) -> Synthesizer:
    """Load any dpsynth model file (safetensors + JSON; never executes code from the file)."""
    from dpsynth.models.base import Synthesizer

    return Synthesizer.load(path)
