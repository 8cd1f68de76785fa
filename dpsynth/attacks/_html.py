"""HTML fragment of the privacy-risk section (inline SVG chart, tables, definitions; no external assets), rendered by
:mod:`dpsynth.html` from the template ``risk_section.html.j2`` (autoescaping on)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpsynth.html import number, render

if TYPE_CHECKING:
    from dpsynth.attacks.risk import RiskResult

__all__ = ["risk_section"]

_COLOURS = {"membership": "#c0392b", "attribute": "#8e44ad", "singling_out": "#d35400", "linkability": "#2c3e50"}

def _pct(level: float) -> str:
    return f"{100.0 * level:.3g}%"


def _confidence(rr: RiskResult) -> float:
    levels = {r.confidence for r in rr.results}
    return levels.pop() if len(levels) == 1 else float(rr.settings.get("confidence", 0.95))


def _ci_text(est, digits: int = 2) -> str:
    """`` [lo, hi]`` (the level is in the column header), or nothing."""
    if est is None or est.ci is None:
        return ""
    return f" [{_fmt(est.ci[0], digits)}, {_fmt(est.ci[1], digits)}]"


def _fmt(x: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals; a missing or undefined one as a dash; anything else as its text."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "\u2013"
    return number(x, digits=digits)


def _cell(text: str, title: str = "") -> dict[str, str]:
    return {"text": text, "cls": "", "title": title}


def _chart(results) -> dict | None:
    if not results:
        return None
    row_h, left, width = 22, 230, 360
    height = row_h * len(results) + 30

    def x_of(v: float) -> str:
        return f"{left + max(0.0, min(1.0, v)) * width:.1f}"

    bars = [{"y": 8 + i * row_h, "attack": r.attack, "colour": _COLOURS.get(r.kind, "#555"),
             "w": f"{max(0.0, min(1.0, r.value)) * width:.1f}", "lo": x_of(r.ci[0]), "hi": x_of(r.ci[1])}
            for i, r in enumerate(results)]
    ticks = [(f"{left + t * width:g}", f"{t:g}") for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return {"width": left + width + 60, "height": height, "left": left, "ticks": ticks, "bars": bars}


def _summary_table(rr: RiskResult) -> dict:
    level = _confidence(rr)
    rows = []
    for r in rr.results:
        other = "" if abs(r.confidence - level) < 1e-9 else f" ({_pct(r.confidence)})"
        rows.append([_cell(r.attack), _cell(str(r.kind)), _cell(_fmt(r.value)),
                     _cell(f"[{_fmt(r.ci[0])}, {_fmt(r.ci[1])}]{other}"), _cell(_fmt(r.baseline), r.baseline_name),
                     _cell(str(r.n_targets)), _cell(r.notes)])
    return {"head": ["attack", "kind", "risk", f"{_pct(level)} CI", "baseline", "targets", "notes"], "rows": rows}


def _membership_table(rr: RiskResult) -> dict | None:
    mia = [r for r in rr.results if r.kind == "membership"]
    if not mia:
        return None
    cols = ("accuracy", "tpr", "fpr", "auc", "advantage", "privacy_gain")

    def header(c: str) -> str:  # the level of each column's intervals (TPR / FPR: per-rate sqrt(level))
        levels = {(r.metrics[c].level or r.confidence) for r in mia if c in r.metrics and r.metrics[c].ci is not None}
        return f"{c} ({_pct(levels.pop())} CI)" if len(levels) == 1 else c

    rows = []
    for r in mia:
        cells = [_cell(r.attack)]
        for c in cols:
            est = r.metrics.get(c)
            cells.append(_cell(_fmt(None if est is None else est.value) + _ci_text(est)))
        rows.append(cells)
    return {"head": ["attack", *(header(c) for c in cols)], "rows": rows}


def _attribute_table(rr: RiskResult) -> dict | None:
    found = [r for r in rr.results if r.kind == "attribute" and "privacy_gain" in r.metrics]
    if not found:
        return None

    def cell(r, m):
        return _cell(_fmt(r.metric(m)) + _ci_text(r.metrics.get(m), 3))

    rows = [[_cell(r.attack), cell(r, "p_real"), cell(r, "p_fake"), cell(r, "privacy_gain")] for r in found]
    return {"head": ["attack", "P_real", "P_fake", "privacy gain"], "rows": rows}


def risk_section(rr: RiskResult) -> str:
    """The section as safe markup, rendered by :mod:`dpsynth.html` (template ``risk_section.html.j2``)."""
    worst = rr.worst()
    level = _confidence(rr)
    return render(
        "risk_section.html.j2",
        worst=None if worst is None else {"attack": worst.attack, "value": _fmt(worst.value),
                                          "lo": _fmt(worst.ci[0]), "hi": _fmt(worst.ci[1]),
                                          "level": _pct(worst.confidence)},
        level=_pct(level), rate_level=_pct(math.sqrt(level)),
        n_results=len(rr.results), n_train=str(rr.settings.get("n_train", "?")),
        n_synthetic=str(rr.settings.get("n_synthetic", "?")), n_control=str(rr.settings.get("n_control", 0)),
        chart=_chart(rr.results), summary=_summary_table(rr), membership=_membership_table(rr),
        attribute=_attribute_table(rr), skipped=list(rr.skipped.items()),
    )
