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


def _number(value: Any, where: str, *, null: bool = True) -> None:
    ok = (value is None and null) or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if not ok:
        raise InputError(f"{where} must be a number{' or null' if null else ''}. Found {type(value).__name__}.")


def _level(value: Any, where: str, *, null: bool) -> None:
    _number(value, where, null=null)
    if value is not None and not (0 < value < 1):
        raise InputError(f"{where} must be a confidence level in (0, 1). Found {value!r}.")


def _text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise InputError(f"{where} must be text. Found {type(value).__name__}.")


def _interval(value: Any, where: str, *, null: bool) -> None:
    if value is None and null:
        return
    if not isinstance(value, list) or len(value) != 2:
        raise InputError(f"{where} must be a list of two numbers. Found {type(value).__name__}.")
    for v in value:
        _number(v, where)


def check_risk_dict(data: Any) -> None:
    """Every field of a risk JSON has the type the writer gives it (InputError naming the first that does not):
    the report interpolates them, so nothing but numbers may stand where numbers go."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError("it has no 'results' list")
    for i, r in enumerate(data["results"]):
        where = f"results[{i}]"
        if not isinstance(r, dict):
            raise InputError(f"{where} must be an object. Found {type(r).__name__}.")
        for key in ("attack", "kind", "baseline_name", "notes"):
            _text(r.get(key), f"{where}.{key}")
        for key in ("value", "baseline"):
            _number(r.get(key), f"{where}.{key}")
        _level(r.get("confidence"), f"{where}.confidence", null=False)
        _interval(r.get("ci"), f"{where}.ci", null=False)
        n = r.get("n_targets")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"{where}.n_targets must be an integer >= 0. Found {n!r}.")
        if not isinstance(r.get("metrics"), dict) or not isinstance(r.get("details"), dict):
            raise InputError(f"{where}.metrics and .details must be objects.")
        for name, est in r["metrics"].items():
            if not isinstance(est, dict):
                raise InputError(f"{where}.metrics.{name} must be an object. Found {type(est).__name__}.")
            _number(est.get("value"), f"{where}.metrics.{name}.value")
            _interval(est.get("ci"), f"{where}.metrics.{name}.ci", null=True)
            _level(est.get("level"), f"{where}.metrics.{name}.level", null=True)
    for key in ("skipped", "settings", "timings"):
        if not isinstance(data.get(key, {}), dict):
            raise InputError(f"'{key}' must be an object. Found {type(data[key]).__name__}.")
    for name, reason in data.get("skipped", {}).items():
        _text(reason, f"skipped.{name}")
    for name, seconds in data.get("timings", {}).items():
        _number(seconds, f"timings.{name}", null=False)
    for key in ("n_train", "n_synthetic", "n_control"):
        if key in data.get("settings", {}):
            _number(data["settings"][key], f"settings.{key}")
    if "confidence" in data.get("settings", {}):
        _level(data["settings"]["confidence"], "settings.confidence", null=True)


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
    try:
        check_risk_dict(data)
    except InputError as exc:
        raise InputError(f"{what}: {exc}") from None
    try:
        return RiskResult.from_dict({**data, "results": [_nan_for_null(r) for r in data["results"]]})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{what}: {type(exc).__name__}: {exc}.") from exc


def risk_section(path: str | os.PathLike) -> tuple[str, str]:
    """``(title, html fragment)`` of the risk results in ``path``, for ``build_report(extra_sections=...)``."""
    return RISK_TITLE, load_risk(path).to_html_section()
