"""JSON round trip for dp-accounting's ``DpEvent`` objects.

Mechanisms describe themselves with the frozen event classes of ``dp_accounting.dp_event``. There is one event
type of our own, :class:`DiscreteGaussianDpEvent`: dp-accounting computes the discrete Gaussian's privacy loss
distribution (``from_discrete_gaussian_mechanism``) but has no event for it, and recording it as a continuous
``GaussianDpEvent`` would be wrong for the PLD accountant (the two privacy profiles differ; the discrete one is
sometimes the larger, e.g. at sigma 1). A saved model must not execute code on load, so events are stored as plain
JSON: ``{"type": "GaussianDpEvent", "noise_multiplier": 1.1}``; nested events recurse. Only the event classes
listed in :data:`_ALLOWED` can be rebuilt.
"""

from __future__ import annotations

from typing import Any

import attr
from dp_accounting import dp_event

from dpsynth.errors import ModelFileError

__all__ = ["DiscreteGaussianDpEvent", "event_to_dict", "event_from_dict", "describe_event"]


@attr.define(frozen=True)
class DiscreteGaussianDpEvent(dp_event.DpEvent):
    """Discrete Gaussian noise ``N_Z(0, sigma^2)`` (``P[x] ~ exp(-x^2 / (2 sigma^2))`` on the integers; ``sigma`` is the
    distribution's parameter, not quite its std) added to an integer query of add/remove sensitivity
    ``sensitivity`` (Canonne, Kamath and Steinke 2020): OpenDP's count noise under ``noise="secure"``.

    Accounted (:mod:`dpsynth.privacy.accounting`) by PLD through dp-accounting's
    ``from_discrete_gaussian_mechanism`` (pessimistic privacy buckets), and by RDP through its zCDP bound
    ``sensitivity^2 / (2 sigma^2)`` (CKS20): at every order the continuous Gaussian's curve.
    """

    sigma: float
    sensitivity: int = 1

    def __attrs_post_init__(self):
        if not (isinstance(self.sigma, (int, float)) and 0 < self.sigma < float("inf")):
            raise ValueError(f"a discrete Gaussian's sigma must be a finite number > 0. Found {self.sigma!r}.")
        if isinstance(self.sensitivity, bool) or not isinstance(self.sensitivity, int) or self.sensitivity < 1:
            raise ValueError(f"a discrete Gaussian's sensitivity must be an integer >= 1. Found {self.sensitivity!r}.")

_ALLOWED = {
    cls.__name__: cls
    for cls in (
        dp_event.NoOpDpEvent,
        dp_event.NonPrivateDpEvent,
        dp_event.GaussianDpEvent,
        dp_event.LaplaceDpEvent,
        dp_event.DiscreteLaplaceDpEvent,
        dp_event.PoissonSampledDpEvent,
        dp_event.SampledWithoutReplacementDpEvent,
        dp_event.SampledWithReplacementDpEvent,
        dp_event.SelfComposedDpEvent,
        dp_event.ComposedDpEvent,
        dp_event.RandomizedResponseDpEvent,
        dp_event.ZCDpEvent,
        DiscreteGaussianDpEvent,
    )
}


def event_to_dict(event: dp_event.DpEvent) -> dict[str, Any]:
    """Return a JSON-able dict describing ``event`` (recursively)."""
    name = type(event).__name__
    if name not in _ALLOWED:
        raise TypeError(f"DpEvent type {name} cannot be stored; allowed: {sorted(_ALLOWED)}")
    out: dict[str, Any] = {"type": name}
    for field in attr.fields(type(event)):
        value = getattr(event, field.name)
        if isinstance(value, dp_event.DpEvent):
            value = event_to_dict(value)
        elif isinstance(value, (list, tuple)):
            value = [event_to_dict(v) if isinstance(v, dp_event.DpEvent) else v for v in value]
        out[field.name] = value
    return out


def event_from_dict(data: dict[str, Any]) -> dp_event.DpEvent:
    """Rebuild an event written by :func:`event_to_dict`; unknown types are refused."""
    if not isinstance(data, dict) or data.get("type") not in _ALLOWED:
        raise ModelFileError(f"Unknown privacy event in model file: {data!r:.200}")
    cls = _ALLOWED[data["type"]]
    kwargs = {}
    for field in attr.fields(cls):
        value = data.get(field.name)
        if isinstance(value, dict):
            value = event_from_dict(value)
        elif isinstance(value, list):
            value = [event_from_dict(v) if isinstance(v, dict) else v for v in value]
        kwargs[field.name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"Invalid privacy event in model file: {data!r:.200} ({exc})") from exc


def describe_event(event: dp_event.DpEvent) -> str:
    """A short human-readable form, e.g. ``Poisson(q=0.0079) o Gaussian(sigma=1.1)``."""
    if isinstance(event, dp_event.GaussianDpEvent):
        return f"Gaussian(z={event.noise_multiplier:.4g})"
    if isinstance(event, DiscreteGaussianDpEvent):
        return f"DiscreteGaussian(sigma={event.sigma:.4g}, sensitivity={event.sensitivity})"
    if isinstance(event, dp_event.LaplaceDpEvent):
        return f"Laplace(b={event.noise_multiplier:.4g})"
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        return f"DiscreteLaplace(a={event.noise_parameter:.4g}, sensitivity={event.sensitivity})"
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return f"Poisson(q={event.sampling_probability:.4g}) o {describe_event(event.event)}"
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        return (f"WithoutReplacement({event.sample_size} of {event.source_dataset_size}) o "
                f"{describe_event(event.event)}")
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return f"{event.count} x {describe_event(event.event)}"
    if isinstance(event, dp_event.ComposedDpEvent):
        return " + ".join(describe_event(e) for e in event.events)
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return "non-private"
    if isinstance(event, dp_event.NoOpDpEvent):
        return "no-op"
    return type(event).__name__
