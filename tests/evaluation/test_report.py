"""The HTML report: self-contained, sections present, and rendered for real in headless Chromium."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from dpsynth.evaluation import Limits, build_report, evaluate, write_report

CHROMIUM = Path("/usr/bin/chromium")
# CI sets DPSYNTH_REQUIRE_BROWSER=1: there a missing browser fails these tests instead of skipping them
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and os.environ.get("DPSYNTH_REQUIRE_BROWSER") != "1",
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")
LEDGER = {"epsilon": 0.98, "target_epsilon": 1.0, "target_delta": 1e-5, "accountant": "best", "mu_gdp": 0.41,
          "separation": 0.17, "phases": {"vae": 0.7, "diffusion": 0.6},
          "entries": [{"phase": "vae", "mechanism": "dpsgd", "count": 10, "extra_delta": 0.0,
                       "params": {"sigma": 1.1}}]}


@pytest.fixture(scope="module")
def result(real, real_test):
    return evaluate(real, real.sample(frac=1.0, random_state=0), real_test=real_test, target="label",
                    seeds=(0,), n_jobs=1, limits=Limits(per_column_rows=100, discriminator_rows=200))


@pytest.fixture(scope="module")
def report_path(result, tmp_path_factory) -> Path:
    """The report with a ledger and the risk section rebuilt from a risk JSON (``--risk``)."""
    from dpsynth.attacks.base import Estimate, Result
    from dpsynth.attacks.risk import RiskResult
    from dpsynth.evaluation.risk_section import risk_section

    folder = tmp_path_factory.mktemp("report")
    risk = RiskResult([Result(attack="density", kind="membership", value=0.3, ci=(0.1, 0.5), baseline=0.5,
                              baseline_name="chance", metrics={"auc": Estimate(0.6, (0.5, 0.7))}, n_targets=100)],
                      {}, {"n_train": 400, "n_synthetic": 400, "n_control": 200})
    risk.to_json(folder / "risk.json")
    path = folder / "report.html"
    write_report(path, result, ledger=LEDGER, extra_sections=[risk_section(folder / "risk.json")],
                 title="Test <report>")
    return path


def test_report_is_self_contained_with_every_section(report_path):
    text = report_path.read_text(encoding="utf-8")
    assert "Test &lt;report&gt;" in text  # titles are escaped
    for section in ("Privacy ledger", "Per phase", "Summary", "ML efficacy", "1-way histograms", "Association matrices",
                    "2-way PCA marginal", "Dimension-wise scatter plots", "Privacy risk", "All metrics"):
        assert section in text, section
    assert "mu_gdp" in text and "separation" in text
    assert "dpsynth-privacy-risk" in text and "<svg" in text  # the risk section, chart included
    assert not re.search(r"(src|href)=['\"]https?:", text)  # nothing fetched from the network
    assert len(re.findall(r"<img ", text)) >= 8
    assert all(src.startswith("data:image/png;base64,") for src in re.findall(r"<img [^>]*src='([^']+)'", text))


def test_report_without_ledger_or_figures(result):
    bare = type(result).from_rows([], {}, {})
    text = build_report(bare)
    assert "Privacy ledger" not in text and text.rstrip().endswith("</html>")


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=5000"]
    return subprocess.run([str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=120)


def _console_lines(stderr: str) -> list[str]:
    """Chromium logs every console message (errors too, at INFO level) as ':CONSOLE'; the report logs none."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.browser
@needs_chromium
def test_report_renders_in_headless_chromium(report_path, tmp_path):
    url = report_path.resolve().as_uri()
    dom = _chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the page's own check: every <img> decoded with a non-zero natural width
    assert 'data-rendered="ok"' in dom.stdout, re.findall(r"render-check:[^<]*", dom.stdout)
    assert not _console_lines(dom.stderr), _console_lines(dom.stderr)
    shot = tmp_path / "report.png"
    run = _chromium(tmp_path, "--window-size=1280,3000", f"--screenshot={shot}", url)
    assert run.returncode == 0 and shot.exists() and shot.stat().st_size > 20_000, run.stderr[-2000:]


@pytest.mark.browser
@needs_chromium
def test_browser_check_catches_a_broken_figure(report_path, tmp_path):
    broken = tmp_path / "broken.html"
    text = report_path.read_text(encoding="utf-8")
    broken.write_text(text.replace("data:image/png;base64,", "data:image/png;base64,AAAA", 1), encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", broken.resolve().as_uri())
    assert 'data-rendered="failed"' in dom.stdout


@pytest.mark.browser
@needs_chromium
def test_browser_check_catches_a_script_error(report_path, tmp_path):
    bad = tmp_path / "error.html"
    text = report_path.read_text(encoding="utf-8")
    bad.write_text(text.replace("</body>", "<script>throw new Error('boom');</script></body>"), encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", bad.resolve().as_uri())
    assert any("boom" in line for line in _console_lines(dom.stderr))


def test_text_from_the_data_is_escaped_by_the_template_engine(tmp_path):
    """Column names, categories and notes come from the private table: the renderer (Jinja2, autoescape) escapes
    them everywhere they land — table cells, figure captions, the risk section — so no markup gets through."""
    from dpsynth.evaluation.report import ledger_html, table_html
    from dpsynth.html import render

    evil = "<script>alert(1)</script>"
    cell = table_html([{"metric": evil, "value": float("nan"), "note": evil}], ["metric", "value", "note"])
    assert "<script>" not in cell and "&lt;script&gt;" in cell and ">undefined<" in cell
    ledger = ledger_html({"epsilon": 1.0, "flags": [evil], "phases": {evil: 0.5}})
    assert "<script>" not in ledger and ledger.count("&lt;script&gt;") == 2
    page = build_report(None, ledger={"epsilon": 1.0}, extra_sections=[(evil, "<p>trusted fragment</p>")],
                        title=evil)
    assert "<script>alert" not in page and "<p>trusted fragment</p>" in page  # dpsynth's own fragments pass
    assert render("table.html.j2", head=[evil], rows=[], cls="").count("&lt;script&gt;") == 1
