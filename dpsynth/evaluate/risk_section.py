"""The privacy-risk section of the report, rebuilt from the JSON that ``dpsynth attack --json`` writes.

``dpsynth report --risk risk.json`` and ``dpsynth evaluate --report out.html --risk risk.json`` put the
attack results next to the utility metrics on one page. The JSON is :meth:`RiskResult.to_json`'s; it is read
back with :meth:`RiskResult.from_dict` and rendered by :meth:`RiskResult.to_html_section`, so the section is
the same one ``dpsynth attack --report`` draws.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from dpsynth.errors import InputError

__all__ = ["RISK_TITLE", "load_risk", "risk_section"]

RISK_TITLE = "Privacy risk"


def _nan_for_null(result: dict[str, Any]) -> dict[str, Any]:
    """JSON writes an undefined number as null; the result object expects a float (NaN)."""
    out = dict(result)
    for key in ("value", "baseline"):
        if out.get(key) is None:
            out[key] = math.nan
    if isinstance(out.get("ci"), list):
        out["ci"] = [math.nan if v is None else v for v in out["ci"]]
    return out


def load_risk(path: str | os.PathLike):
    """The :class:`~dpsynth.attacks.risk.RiskResult` stored in ``path`` (InputError when it is not one)."""
    from dpsynth.attacks.risk import RiskResult

    path = Path(path)
    if not path.is_file():
        raise InputError(f"No such file: {path}.")
    what = f"{path} is not a dpsynth risk JSON (written by dpsynth attack --json)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{what}: {exc}.") from exc
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError(f"{what}: it has no 'results' list.")
    try:
        return RiskResult.from_dict({**data, "results": [_nan_for_null(r) for r in data["results"]]})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{what}: {type(exc).__name__}: {exc}.") from exc


def risk_section(path: str | os.PathLike) -> tuple[str, str]:
    """``(title, html fragment)`` of the risk results in ``path``, for ``build_report(extra_sections=...)``."""
    return RISK_TITLE, load_risk(path).to_html_section()
