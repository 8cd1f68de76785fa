"""Every registered model passes the Synthesizer contract (tests/contract.py) on an Adult slice."""

from __future__ import annotations

import pytest

from dpsynth.models import available_models, get_model_class
from dpsynth.models.checks import check_non_private, check_synthesizer


@pytest.mark.parametrize("name", available_models())
def test_contract_with_public_schema(name, adult_small, adult_schema, tmp_path):
    # non-private mode is test_non_private_mode's (the checks would otherwise fit it three times per model)
    check_synthesizer(get_model_class(name), adult_small, adult_schema, tmp_path, non_private=False)


# subclasses whose fit is their parent's with other defaults: their discovery contract runs in CI's slow pass
_SUBCLASSES = ("dp-ctgan", "dp-vae", "dp-gan", "pate-ctgan")


@pytest.mark.parametrize("name", [n if n not in _SUBCLASSES else pytest.param(n, marks=[
    pytest.mark.slow(reason="its parent's discovery contract covers its fit"), pytest.mark.ci])
    for n in available_models()])
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
