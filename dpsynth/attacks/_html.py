"""HTML fragment of the privacy-risk section (inline SVG chart, tables, definitions; no external assets)."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpsynth.attacks.risk import RiskResult

__all__ = ["risk_section", "standalone_page"]

_COLOURS = {"membership": "#c0392b", "attribute": "#8e44ad", "singling_out": "#d35400", "linkability": "#2c3e50"}

_DEFINITIONS = """
<dl class="dpsynth-defs">
<dt>Risk</dt><dd>0 = the attacker does no better than its baseline, 1 = maximal. Membership: relative risk
(2 &times; accuracy &minus; 1, seed 004 eq. 1 with a 50% control rate) on held-out members (training rows) and
non-members (control rows). Singling out, linkability, nearest-neighbour inference: anonymeter's residual risk
over the control set (Giomi et al. 2023).</dd>
<dt>Privacy gain</dt><dd>Seed 002: (P_real &minus; P_fake)/2. Membership: 0.25 = the attacker is at chance,
0 = the synthetic data reveals membership as well as the raw data. Attribute inference: 0 = the synthetic data
lets the attacker infer the secret as well as the raw data.</dd>
<dt>Intervals</dt><dd>{level} confidence (Wilson for rates, Hanley-McNeil for AUC, bootstrap over test rows
for the attribute attack's P_real, P_fake and privacy gain) unless a column says otherwise: membership TPR and
FPR intervals are at {rate_level} each, so that the advantage interval built from both holds at {level}. A risk
whose interval includes 0 is not evidence of leakage; it is not proof of safety either.</dd>
</dl>
"""


def _pct(level: float) -> str:
    return f"{100.0 * level:.3g}%"


def _confidence(rr: RiskResult) -> float:
    levels = {r.confidence for r in rr.results}
    return levels.pop() if len(levels) == 1 else float(rr.settings.get("confidence", 0.95))


def _ci_cell(est, digits: int = 2) -> str:
    """`` [lo, hi]`` in small type (the level is in the column header)."""
    if est is None or est.ci is None:
        return ""
    return f" <small>[{_fmt(est.ci[0], digits)}, {_fmt(est.ci[1], digits)}]</small>"


def _fmt(x: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals; anything that is not a real number is shown escaped, never raw."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "&ndash;"
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return html.escape(str(x))
    return f"{x:.{digits}f}"


def _setting(rr: RiskResult, key: str, default) -> str:
    return html.escape(str(rr.settings.get(key, default)))


def _chart(results) -> str:
    if not results:
        return ""
    row_h, left, width = 22, 230, 360
    height = row_h * len(results) + 30
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{height}" '
              f'role="img" aria-label="privacy risk per attack" style="font:12px sans-serif">')]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * width
        parts.append(f'<line x1="{x}" y1="5" x2="{x}" y2="{height - 20}" stroke="#ddd"/>'
                     f'<text x="{x}" y="{height - 6}" text-anchor="middle">{tick:g}</text>')
    for i, r in enumerate(results):
        y = 8 + i * row_h
        colour = _COLOURS.get(r.kind, "#555")
        w = max(0.0, min(1.0, r.value)) * width
        lo, hi = (left + max(0.0, min(1.0, v)) * width for v in r.ci)
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{html.escape(r.attack)}</text>'
                     f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="12" fill="{colour}" opacity="0.8"/>'
                     f'<line x1="{lo:.1f}" y1="{y + 9}" x2="{hi:.1f}" y2="{y + 9}" stroke="#000"/>'
                     f'<line x1="{lo:.1f}" y1="{y + 5}" x2="{lo:.1f}" y2="{y + 13}" stroke="#000"/>'
                     f'<line x1="{hi:.1f}" y1="{y + 5}" x2="{hi:.1f}" y2="{y + 13}" stroke="#000"/>')
    parts.append("</svg>")
    return "".join(parts)


def _summary_table(rr: RiskResult) -> str:
    level = _confidence(rr)
    head = (f"<tr><th>attack</th><th>kind</th><th>risk</th><th>{_pct(level)} CI</th><th>baseline</th>"
            "<th>targets</th><th>notes</th></tr>")
    rows = []
    for r in rr.results:
        other = "" if abs(r.confidence - level) < 1e-9 else f" <small>{_pct(r.confidence)}</small>"
        rows.append(f"<tr><td>{html.escape(r.attack)}</td><td>{html.escape(str(r.kind))}</td><td>{_fmt(r.value)}</td>"
                    f"<td>[{_fmt(r.ci[0])}, {_fmt(r.ci[1])}]{other}</td>"
                    f"<td title=\"{html.escape(r.baseline_name)}\">{_fmt(r.baseline)}</td>"
                    f"<td>{html.escape(str(r.n_targets))}</td>"
                    f"<td>{html.escape(r.notes)}</td></tr>")
    return f'<table class="dpsynth-risk">{head}{"".join(rows)}</table>'


def _membership_table(rr: RiskResult) -> str:
    mia = [r for r in rr.results if r.kind == "membership"]
    if not mia:
        return ""
    cols = ("accuracy", "tpr", "fpr", "auc", "advantage", "privacy_gain")

    def header(c: str) -> str:  # the level of each column's intervals (TPR / FPR: per-rate sqrt(level))
        levels = {(r.metrics[c].level or r.confidence) for r in mia if c in r.metrics and r.metrics[c].ci is not None}
        return f"<th>{c} <small>({_pct(levels.pop())} CI)</small></th>" if len(levels) == 1 else f"<th>{c}</th>"

    head = "<tr><th>attack</th>" + "".join(header(c) for c in cols) + "</tr>"
    body = []
    for r in mia:
        cells = []
        for c in cols:
            est = r.metrics.get(c)
            ci = _ci_cell(est)
            cells.append(f"<td>{_fmt(None if est is None else est.value)}{ci}</td>")
        body.append(f"<tr><td>{html.escape(r.attack)}</td>{''.join(cells)}</tr>")
    return f'<h4>Membership inference</h4><table class="dpsynth-risk">{head}{"".join(body)}</table>'


def _attribute_table(rr: RiskResult) -> str:
    rows = [r for r in rr.results if r.kind == "attribute" and "privacy_gain" in r.metrics]
    if not rows:
        return ""
    def cells(r, m):
        return f"<td>{_fmt(r.metric(m))}{_ci_cell(r.metrics.get(m), 3)}</td>"
    body = "".join(f"<tr><td>{html.escape(r.attack)}</td>{cells(r, 'p_real')}{cells(r, 'p_fake')}"
                   f"{cells(r, 'privacy_gain')}</tr>" for r in rows)
    level = _pct(_confidence(rr))
    return (f"<h4>Attribute inference (seed 002; {level} CI)</h4><table class=\"dpsynth-risk\"><tr><th>attack</th>"
            f"<th>P_real</th><th>P_fake</th><th>privacy gain</th></tr>{body}</table>")


def risk_section(rr: RiskResult) -> str:
    worst = rr.worst()
    lead = ("<p>No attack ran.</p>" if worst is None else
            f"<p>Highest risk: <b>{html.escape(worst.attack)}</b> = {_fmt(worst.value)} "
            f"({_pct(worst.confidence)} CI {_fmt(worst.ci[0])}&ndash;{_fmt(worst.ci[1])}). "
            f"{len(rr.results)} attacks on {_setting(rr, 'n_train', '?')} training rows, "
            f"{_setting(rr, 'n_synthetic', '?')} synthetic rows, {_setting(rr, 'n_control', 0)} control rows.</p>")
    level = _confidence(rr)
    definitions = _DEFINITIONS.format(level=_pct(level), rate_level=_pct(math.sqrt(level)))
    skipped = ""
    if rr.skipped:
        items = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in rr.skipped.items())
        skipped = f"<h4>Skipped</h4><ul>{items}</ul>"
    return (f'<section class="dpsynth-privacy-risk">{lead}{_chart(rr.results)}'
            f"{_summary_table(rr)}{_membership_table(rr)}{_attribute_table(rr)}{skipped}{definitions}</section>")


def standalone_page(title: str, sections: list[tuple[str, str]]) -> str:
    """A minimal self-contained HTML page holding (title, fragment) sections."""
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}"
             "dt{font-weight:bold}")
    body = "".join(f"<h2>{html.escape(t)}</h2>{frag}" for t, frag in sections)
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n")
