"""One self-contained HTML report: ledger, summary table, plots (embedded PNG), extra sections.

``build_report`` returns the HTML text; ``write_report`` writes it atomically. Other engineers add a section
with ``extra_sections=[(title, html_fragment), ...]`` (e.g. the privacy-risk results, :mod:`.risk_section`);
fragments are inserted as given, so they must be trusted HTML produced by dpsynth code, not user text. With
``evaluation=None`` the page holds only the ledger and the extra sections (``dpsynth attack --report``).

The page needs no network: images are ``data:`` URIs and the only script is an inline check that marks the
page (``<body data-rendered="ok">``, and the text of ``#render-status``) once every image has decoded with a
non-zero size, so a headless browser test can tell a broken figure from a working one.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpsynth._io import atomic_write_text
from dpsynth.evaluation.figures import render_all
from dpsynth.evaluation.result import EvaluationResult

__all__ = ["build_report", "write_report", "ledger_html", "table_html", "ml_table_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;
padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.grid{display:flex;flex-wrap:wrap;gap:.6em}.grid figure{margin:0}figcaption{font-size:.75em;color:#555}
img{max-width:100%;height:auto}.note{color:#a33}.muted{color:#777;font-size:.85em}
details summary{cursor:pointer;margin:.5em 0}
"""

_CHECK_JS = """
(function(){
  function check(){
    var imgs=document.images, bad=[];
    for(var i=0;i<imgs.length;i++){
      if(!(imgs[i].complete && imgs[i].naturalWidth>0)) bad.push(imgs[i].alt||String(i));
    }
    var status=document.getElementById('render-status');
    var ok=bad.length===0;
    document.body.setAttribute('data-rendered', ok ? 'ok' : 'failed');
    status.textContent = ok ? ('render-check: ok, '+imgs.length+' images') : ('render-check: failed: '+bad.join(', '));
  }
  if(document.readyState==='complete'){check();} else {window.addEventListener('load', check);}
})();
"""


def _fmt(value: Any, nan: str = "undefined") -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return nan
        if math.isinf(value):
            return "inf"
        return f"{value:.4g}"
    return html.escape(str(value))


def table_html(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain HTML table (values escaped, floats to 4 significant digits)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            cls = ' class="num"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            undefined_value = isinstance(r.get("value"), float) and math.isnan(r["value"])
            if c == "note" and v:
                cls = ' class="note"' if undefined_value else ' class="muted"'
            cells.append(f"<td{cls}>{_fmt(v, 'undefined' if c == 'value' else '&ndash;')}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def ml_table_html(ml) -> str:
    """Pivot of the ``ml_efficacy.<score>.<variant>`` rows: one line per model, one cell per score/variant."""
    parts = ml.metric.str.split(".", expand=True)
    ml = ml.assign(score=parts[1], variant=parts[2])
    scores = list(dict.fromkeys(ml.score))
    variants = ["real", "synthetic", "diff"]
    head = "<tr><th rowspan=2>model</th>" + "".join(f"<th colspan=3>{html.escape(s)}</th>" for s in scores) + "</tr>"
    head += "<tr>" + "".join(f"<th>{v}</th>" for _ in scores for v in variants) + "</tr>"
    body = []
    for model in dict.fromkeys(ml.subject):
        cells = []
        for s in scores:
            for v in variants:
                hit = ml[(ml.subject == model) & (ml.score == s) & (ml.variant == v)]
                if hit.empty:
                    cells.append("<td></td>")
                    continue
                r = hit.iloc[0]
                text = _fmt(r.value) + ("" if math.isnan(r.spread) else f" &plusmn; {r.spread:.2g}")
                title = f" title='{html.escape(r.note)}'" if r.note else ""
                cells.append(f"<td class='num'{title}>{text}</td>")
        body.append(f"<tr><td>{html.escape(model)}</td>{''.join(cells)}</tr>")
    return f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def ledger_html(ledger: dict[str, Any]) -> str:
    """The model's privacy ledger: total (epsilon, delta), mu-GDP / separation if present, per-phase epsilon."""
    known = ["epsilon", "target_epsilon", "target_delta", "epsilon_pld", "epsilon_rdp", "accountant", "neighbouring"]
    extra = [k for k, v in ledger.items() if k not in known and k not in ("phases", "entries")
             and isinstance(v, (int, float, str))]
    head = [{"quantity": k, "value": ledger[k]} for k in known + extra if k in ledger]
    parts = [table_html(head, ["quantity", "value"])]
    for flag in ledger.get("flags") or []:  # from the ledger recomputed out of the model file's events
        parts.insert(0, f"<p class='warning'><strong>Warning:</strong> {html.escape(str(flag))}</p>")
    phases = ledger.get("phases") or {}
    if phases:
        parts.append("<h3>Per phase</h3>" + table_html([{"phase": k, "epsilon": v} for k, v in phases.items()],
                                                       ["phase", "epsilon"]))
    entries = ledger.get("entries") or []
    if entries:
        rows = [{"phase": e.get("phase"), "mechanism": e.get("mechanism"), "count": e.get("count"),
                 "extra_delta": e.get("extra_delta"),
                 "params": ", ".join(f"{k}={v}" for k, v in (e.get("params") or {}).items())} for e in entries]
        parts.append("<details><summary>Ledger entries</summary>"
                     + table_html(rows, ["phase", "mechanism", "count", "extra_delta", "params"]) + "</details>")
    return "\n".join(parts)


def _header(title: str, info: dict[str, Any] | None) -> list[str]:
    out = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
           f"<style>{_CSS}</style></head><body data-rendered='pending'>", f"<h1>{html.escape(title)}</h1>"]
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    facts = "" if info is None else (
        f" &middot; real rows: {_fmt(info.get('n_real'))} &middot; synthetic rows: {_fmt(info.get('n_synthetic'))}"
        f" &middot; real test rows: {_fmt(info.get('n_real_test')) or 'none'} &middot; target: "
        f"{_fmt(info.get('target')) or 'none'}")
    out.append(f"<p class='muted'>{html.escape(stamp)}{facts} &middot; "
               "<span id='render-status'>render-check: pending</span></p>")
    return out


def _utility_sections(evaluation: EvaluationResult) -> list[str]:
    """Summary table, ML efficacy pivot and every figure of an evaluation."""
    t = evaluation.table
    cols = ["metric", "subject", "value", "spread", "n_seeds", "note"]
    overall = t[(t.subject.isin(["(all)", "(sum)"])) & ~t.metric.str.startswith("ml_efficacy")]
    out = ["<h2>Summary</h2>" + table_html(overall.to_dict(orient="records"), cols)]
    ml = t[t.metric.str.startswith("ml_efficacy.") & (t.subject != "(all)")]
    if not ml.empty:
        out.append("<h3>ML efficacy: mean &plusmn; std over seeds (train on real / on synthetic, |difference|)</h3>"
                   + ml_table_html(ml))
    undefined_ml = t[(t.metric == "ml_efficacy") & t.value.isna()]
    for note in undefined_ml.note:
        out.append(f"<p class='note'>ML efficacy undefined: {html.escape(note)}</p>")
    for section, intro, images in render_all(evaluation.figures):
        figs = "".join(f"<figure><img alt='{html.escape(cap)}' src='{uri}'><figcaption>{html.escape(cap)}</figcaption>"
                       f"</figure>" for cap, uri in images)
        out.append(f"<h2>{html.escape(section)}</h2><p class='muted'>{html.escape(intro)}</p>"
                   f"<div class='grid'>{figs}</div>")
    return out


def _closing(evaluation: EvaluationResult) -> list[str]:
    cols = ["metric", "subject", "value", "spread", "n_seeds", "note"]
    out = ["<h2>All metrics</h2><details><summary>Full table ("
           f"{len(evaluation.table)} rows)</summary>{table_html(evaluation.table.to_dict(orient='records'), cols)}"
           "</details>"]
    seconds = evaluation.info.get("seconds") or {}
    if seconds:
        out.append("<p class='muted'>Seconds per metric group: "
                   + html.escape(", ".join(f"{k} {v:.1f}" for k, v in seconds.items())) + "</p>")
    return out


def build_report(
    evaluation: EvaluationResult | None,
    *,
    ledger: dict[str, Any] | None = None,
    extra_sections: Sequence[tuple[str, str]] = (),
    title: str = "dpsynth evaluation report",
) -> str:
    """The report as one HTML string (see the module docstring for its guarantees).

    ``evaluation=None`` gives a page with only the ledger (when given) and the ``extra_sections`` (e.g. the
    privacy-risk section of ``dpsynth attack --report``), with the same style and render check.
    """
    out = _header(title, None if evaluation is None else evaluation.info)
    if ledger is not None:
        out.append("<h2>Privacy ledger</h2>" + ledger_html(ledger))
    if evaluation is not None:
        out += _utility_sections(evaluation)
    for section, fragment in extra_sections:
        out.append(f"<h2>{html.escape(section)}</h2>\n{fragment}")
    if evaluation is not None:
        out += _closing(evaluation)
    out.append(f"<script>{_CHECK_JS}</script></body></html>")
    return "\n".join(out)


def write_report(path: str | os.PathLike, evaluation: EvaluationResult | None, **kwargs: Any) -> Path:
    """Write :func:`build_report` to ``path`` atomically (temp file + rename); return the path."""
    return atomic_write_text(path, build_report(evaluation, **kwargs))
