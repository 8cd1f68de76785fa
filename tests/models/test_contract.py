"""Every registered model passes the Synthesizer contract (tests/contract.py) on an Adult slice."""

from __future__ import annotations

import pytest

from dpsynth.models import available_models, get_model_class
from dpsynth.models.checks import check_non_private, check_synthesizer


@pytest.mark.parametrize("name", available_models())
def test_contract_with_public_schema(name, adult_small, adult_schema, tmp_path):
    # non-private mode is test_non_private_mode's (the checks would otherwise fit it three times per model)
    check_synthesizer(get_model_class(name), adult_small, adult_schema, tmp_path, non_private=False)


@pytest.mark.parametrize("name", available_models())
def test_contract_with_dp_discovery(name, adult_small, tmp_path):
    model = check_synthesizer(get_model_class(name), adult_small, None, tmp_path, epsilon=3.0, non_private=False)
    # a non-private baseline runs at epsilon = inf, where the schema is read off the rows
    assert model.schema_.provenance == ("dp" if model.supports_dp else "inferred")


@pytest.mark.parametrize("name", available_models())
def test_non_private_mode(name, adult_small, adult_schema):
    check_non_private(get_model_class(name), adult_small, adult_schema)
