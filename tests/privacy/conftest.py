import logging

import pytest

# dp-accounting logs (via absl) when it drops an RDP order it cannot evaluate; the bound stays valid. Keep output quiet.
logging.getLogger("absl").setLevel(logging.ERROR)  # (the library now does this itself)


class _DiscreteDraws:
    """The parameters of the discrete Gaussians drawn (OpenDP's count noise under ``noise="secure"``)."""

    def __init__(self):
        self.sigmas: list[float] = []

    def check(self, ledger) -> None:
        """Every discrete Gaussian drawn is recorded as one (``DiscreteGaussianDpEvent`` of its sigma): read as a
        continuous ``GaussianDpEvent``, the PLD accountant would misstate it."""
        from dp_accounting import dp_event

        from dpsynth.privacy.events import DiscreteGaussianDpEvent

        recorded = set()
        for entry in ledger.entries:
            event = entry.event
            while isinstance(event, dp_event.SelfComposedDpEvent):
                event = event.event
            if isinstance(event, DiscreteGaussianDpEvent):
                recorded.add(event.sigma)
        assert self.sigmas, "no discrete Gaussian was drawn"
        missing = {s for s in self.sigmas if s not in recorded}
        assert not missing, f"discrete Gaussians drawn at sigma {sorted(missing)[:5]} without their event"


@pytest.fixture
def discrete_draws(monkeypatch):
    """A spy on every discrete Gaussian the count mechanisms and PATE's argmax draw (their sigma)."""
    from dpsynth.privacy import mechanisms, pate

    draws = _DiscreteDraws()
    for module in (mechanisms, pate):
        real = module.discrete_gaussian
        monkeypatch.setattr(module, "discrete_gaussian",
                            lambda counts, sigma, real=real: draws.sigmas.append(float(sigma)) or real(counts, sigma))
    return draws
