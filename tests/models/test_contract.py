"""Every registered model passes the Synthesizer contract (tests/contract.py) on an Adult slice."""

from __future__ import annotations

import pytest

from dpsynth.models import available_models, get_model_class
from dpsynth.models.checks import check_non_private, check_synthesizer


@pytest.mark.parametrize("name", available_models())
def test_contract_with_public_schema(name, adult_small, adult_schema, tmp_path):
    # non-private mode is test_non_private_mode's (the checks would otherwise fit it three times per model)
    check_synthesizer(get_model_class(name), adult_small, adult_schema, tmp_path, non_private=False)


# subclasses whose fit is their parent's with other defaults, and the deep models whose discovery contract takes
# over 12 s on 2 cores (their fit is the public-schema contract's; the discovery phase is every other model's): in
# CI's slow pass, to keep the default run under 15 minutes
_SUBCLASSES = ("dp-ctgan", "dp-vae", "dp-gan", "pate-ctgan")
_SLOW_DISCOVERY = ("dp-tldm", "dp-tabddpm", "dp-syn")


def _discovery_param(name: str):
    if name in _SUBCLASSES:
        return pytest.param(name, marks=[pytest.mark.slow(reason="its parent's discovery contract covers its fit"),
                                         pytest.mark.ci])
    if name in _SLOW_DISCOVERY:
        return pytest.param(name, marks=[pytest.mark.slow(reason="12-21 s; its fit is the public-schema contract's"),
                                         pytest.mark.ci])
    return name


@pytest.mark.parametrize("name", [_discovery_param(n) for n in available_models()])
def test_contract_with_dp_discovery(name, adult_small, tmp_path):
    model = check_synthesizer(get_model_class(name), adult_small, None, tmp_path, epsilon=3.0, non_private=False)
    # a non-private baseline runs at epsilon = inf, where the schema is read off the rows
    assert model.schema_.provenance == ("dp" if model.supports_dp else "inferred")


# batch-AIM's non-private fit measures every marginal that fits (about 20 s); AIM's, the same code path, stays in the
# default run and batch-AIM's runs in CI's slow pass
_NON_PRIVATE = [pytest.param(n, marks=[pytest.mark.slow(reason="about 20 s; AIM covers the path"), pytest.mark.ci])
                if n == "batch-aim" else n for n in available_models()]


@pytest.mark.parametrize("name", _NON_PRIVATE)
def test_non_private_mode(name, adult_small, adult_schema):
    check_non_private(get_model_class(name), adult_small, adult_schema)
