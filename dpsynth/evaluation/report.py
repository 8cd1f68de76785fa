"""One self-contained HTML report: ledger, summary table, plots (embedded PNG), extra sections.

``build_report`` returns the HTML text; ``write_report`` writes it atomically. Other engineers add a section
with ``extra_sections=[(title, html_fragment), ...]`` (e.g. the privacy-risk results, :mod:`.risk_section`);
fragments are inserted as given, so they must be trusted HTML produced by dpsynth code, not user text. With
``evaluation=None`` the page holds only the ledger and the extra sections (``dpsynth attack --report``).

Rendered by :mod:`dpsynth.html` (Jinja2 templates ``report.html.j2``, ``ledger.html.j2``, ``table.html.j2``,
``ml_table.html.j2``; autoescaping on). The page needs no network: images are ``data:`` URIs and the only script
is an inline check that marks the page (``<body data-rendered="ok">``, and the text of ``#render-status``) once
every image has decoded with a non-zero size, so a headless browser test can tell a broken figure from a working
one.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpsynth._io import atomic_write_text
from dpsynth.evaluation.figures import render_all
from dpsynth.evaluation.result import EvaluationResult
from dpsynth.html import number, render

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


def _cells(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[list[dict[str, str]]]:
    """Table cells as text + CSS class (numbers right-aligned, notes of undefined values highlighted)."""
    out = []
    for r in rows:
        undefined_value = isinstance(r.get("value"), float) and math.isnan(r["value"])
        cells = []
        for c in columns:
            v = r.get(c)
            cls = "num" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            if c == "note" and v:
                cls = "note" if undefined_value else "muted"
            cells.append({"text": number(v, "undefined" if c == "value" else "\u2013"), "cls": cls, "title": ""})
        out.append(cells)
    return out


def table_html(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain HTML table (values escaped by the template engine, floats to 4 significant digits)."""
    return render("table.html.j2", head=list(columns), rows=_cells(rows, columns), cls="")


def ml_table_html(ml) -> str:
    """Pivot of the ``ml_efficacy.<score>.<variant>`` rows: one line per model, one cell per score/variant."""
    parts = ml.metric.str.split(".", expand=True)
    ml = ml.assign(score=parts[1], variant=parts[2])
    scores = list(dict.fromkeys(ml.score))
    variants = ["real", "synthetic", "diff"]
    rows = []
    for model in dict.fromkeys(ml.subject):
        cells = []
        for s in scores:
            for v in variants:
                hit = ml[(ml.subject == model) & (ml.score == s) & (ml.variant == v)]
                if hit.empty:
                    cells.append(None)
                    continue
                r = hit.iloc[0]
                text = number(r.value) + ("" if math.isnan(r.spread) else f" \u00b1 {r.spread:.2g}")
                cells.append({"text": text, "title": r.note or ""})
        rows.append((model, cells))
    return render("ml_table.html.j2", scores=scores, variants=variants, rows=rows)


def ledger_html(ledger: dict[str, Any]) -> str:
    """The model's privacy ledger: total (epsilon, delta), mu-GDP / separation if present, per-phase epsilon."""
    known = ["epsilon", "target_epsilon", "target_delta", "epsilon_pld", "epsilon_rdp", "accountant", "neighbouring"]
    extra = [k for k, v in ledger.items() if k not in known and k not in ("phases", "entries")
             and isinstance(v, (int, float, str))]
    head = [{"quantity": k, "value": ledger[k]} for k in known + extra if k in ledger]
    phases = ledger.get("phases") or {}
    entries = ledger.get("entries") or []
    rows = [{"phase": e.get("phase"), "mechanism": e.get("mechanism"), "count": e.get("count"),
             "extra_delta": e.get("extra_delta"),
             "params": ", ".join(f"{k}={v}" for k, v in (e.get("params") or {}).items())} for e in entries]
    return render(
        "ledger.html.j2",
        flags=[str(f) for f in ledger.get("flags") or []],  # from the ledger recomputed out of the model file
        summary=table_html(head, ["quantity", "value"]),
        phases=table_html([{"phase": k, "epsilon": v} for k, v in phases.items()], ["phase", "epsilon"])
        if phases else "",
        entries=table_html(rows, ["phase", "mechanism", "count", "extra_delta", "params"]) if entries else "",
    )


def _utility(evaluation: EvaluationResult) -> dict[str, Any]:
    """Summary table, ML efficacy pivot, figures and the full table of an evaluation, ready for the template."""
    t = evaluation.table
    cols = ["metric", "subject", "value", "spread", "n_seeds", "note"]
    overall = t[(t.subject.isin(["(all)", "(sum)"])) & ~t.metric.str.startswith("ml_efficacy")]
    ml = t[t.metric.str.startswith("ml_efficacy.") & (t.subject != "(all)")]
    seconds = evaluation.info.get("seconds") or {}
    return {
        "summary": table_html(overall.to_dict(orient="records"), cols),
        "ml": ml_table_html(ml) if not ml.empty else "",
        "undefined_ml": list(t[(t.metric == "ml_efficacy") & t.value.isna()].note),
        "figures": render_all(evaluation.figures),
        "full": table_html(evaluation.table.to_dict(orient="records"), cols),
        "n_rows": len(evaluation.table),
        "seconds": ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()),
    }


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
    from markupsafe import Markup

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return str(render(
        "report.html.j2", title=title, stamp=stamp, css=Markup(_CSS), script=Markup(_CHECK_JS),
        info=None if evaluation is None else evaluation.info,
        ledger=None if ledger is None else ledger_html(ledger),
        utility=None if evaluation is None else _utility(evaluation),
        # fragments are trusted HTML produced by dpsynth code (module docstring); titles are escaped
        extra_sections=[(section, Markup(fragment)) for section, fragment in extra_sections],
    ))


def write_report(path: str | os.PathLike, evaluation: EvaluationResult | None, **kwargs: Any) -> Path:
    """Write :func:`build_report` to ``path`` atomically (temp file + rename); return the path."""
    return atomic_write_text(path, build_report(evaluation, **kwargs))
