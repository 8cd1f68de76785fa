"""The import graph has layers and no cycle: privacy <- data <- marginals <- models <- attacks <- evaluation <- cli
(the marginal engine counts and measures under the ledger; models build on it; evaluation
renders attack results; attacks never import evaluation; no library package imports the command line). Read from
the source (every ``import`` statement, at any depth), so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpsynth"

# package -> packages it must never import
FORBIDDEN = {
    "privacy": ("dpsynth.models", "dpsynth.data", "dpsynth.marginals", "dpsynth.evaluation", "dpsynth.attacks",
                "dpsynth.cli"),
    "data": ("dpsynth.models", "dpsynth.marginals", "dpsynth.evaluation", "dpsynth.attacks", "dpsynth.cli"),
    "marginals": ("dpsynth.models", "dpsynth.evaluation", "dpsynth.attacks", "dpsynth.cli"),
    "models": ("dpsynth.evaluation", "dpsynth.attacks", "dpsynth.cli"),
    "attacks": ("dpsynth.evaluation", "dpsynth.cli"),
    "graphs": ("dpsynth.evaluation", "dpsynth.attacks", "dpsynth.cli"),
    "evaluation": ("dpsynth.cli",),
    "bench": ("dpsynth.cli",),
}


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_a_layer_above_it(package):
    bad = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package]):
                bad.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert not bad, "\n".join(bad)


def test_no_private_name_is_imported_across_modules():
    """A name shared between modules is public (no leading underscore); tests may still reach into internals."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpsynth"):
                bad += [f"{path.relative_to(PACKAGE.parent)}: {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", ["dpsynth", "dpsynth.attacks", "dpsynth.graphs", "dpsynth.privacy",
                                     "dpsynth.evaluation", "dpsynth.models", "dpsynth.cli",
                                     "dpsynth.bench"])
def test_every_public_name_resolves(package):
    """Packages import their names on first use (a map of name -> module): every name in ``__all__`` must resolve,
    so that moving a module cannot leave a dangling entry (``from dpsynth.attacks import LocalExecutor``)."""
    import importlib

    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None and name != "__version__"]
    assert not missing, missing
