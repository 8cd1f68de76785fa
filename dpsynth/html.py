"""The one HTML renderer of dpsynth: Jinja2 templates (``dpsynth/templates/``) with autoescaping on.

Every page and fragment — the evaluation report, its ledger and tables, the privacy-risk section — is a template
filled from plain values, so text from the data (column names, categories, notes, titles) is escaped by the
engine, never by hand; only fragments this renderer produced (:class:`markupsafe.Markup`) pass through unescaped.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

__all__ = ["render", "number"]


def number(value: Any, nan: str = "undefined", digits: int | None = None) -> str:
    """A value as report text: floats to 4 significant digits (or ``digits`` decimals), NaN as ``nan``, None as
    an empty cell; anything else as its text (escaped by the template)."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return nan
        if math.isinf(value):
            return "inf"
        return f"{value:.{digits}f}" if digits is not None else f"{value:.4g}"
    if digits is not None and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:.{digits}f}"
    return str(value)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("dpsynth", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = number
    return env


def render(template: str, **context: Any):
    """The template ``template`` filled with ``context``, as safe markup (a fragment may be put in another)."""
    from markupsafe import Markup

    return Markup(_environment().get_template(template).render(**context))
