"""Start-up (issue 15): ``--help``, ``info`` and ``info --models`` import neither torch nor (for --help) pandas.

Timings live in the README (measured); these tests check the cause of slowness - what gets imported - which does
not depend on the machine."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpsynth.models import BUILTIN, available_models, get_model_class, model_phases


def _modules_after(argv: list[str]) -> set[str]:
    code = ("import sys, json, contextlib, io\n"
            "from dpsynth.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try: main({argv!r})\n"
            "    except SystemExit: pass\n"
            "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, adult_small):
    from dpsynth.models.marginals import Marginals

    path = tmp_path_factory.mktemp("startup") / "m.dpsynth"
    Marginals().fit(adult_small, epsilon=1.0, delta=1e-5, seed=0).save(path)
    return path


def test_help_imports_neither_torch_nor_pandas():
    loaded = _modules_after(["--help"])
    assert "dpsynth" in loaded and not {"torch", "pandas", "sklearn", "scipy"} & loaded


def test_info_recomputes_the_ledger_without_torch(model_file):
    loaded = _modules_after(["info", str(model_file)])
    assert "dp_accounting" in loaded  # the ledger is recomputed from its events
    assert not {"torch", "sklearn", "safetensors"} & loaded
    assert not {"torch", "pandas"} & _modules_after(["info", "--models"])


def test_static_model_table_matches_the_classes():
    assert set(BUILTIN) <= set(available_models())
    for name, (module, phases) in BUILTIN.items():
        cls = get_model_class(name)
        assert cls.__module__ == module and tuple(cls.phases) == phases == model_phases(name)
    assert model_phases("no-such-model") == ()
