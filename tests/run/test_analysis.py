"""An `Analysis` in a notebook (issue #21): its repr is one line, and a real Jupyter kernel
(nbclient runs a small notebook) shows it as the first screen of the HTML report."""

from __future__ import annotations

from pathlib import Path

import pytest
from analyzer import analyze
from analyzer.writers import render_report
from analyzer.writers.html import SCREEN_FINDINGS, first_screen

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"


@pytest.fixture(scope="module")
def result():
    with analyze([str(SAMPLES)], jobs=1) as found:
        yield found


def test_repr_is_one_line_summary(result):
    text = repr(result)
    assert "\n" not in text
    assert text == ("<Analysis: 66 findings (24 not known recoverable), 6 incidents, 13 related errors, 3 nodes; "
                    "8 files, 557 lines read>")


def test_html_view_is_the_reports_first_screen(result):
    view = result._repr_html_()
    assert view == first_screen(result)
    page = render_report("html", result)
    # The page's own parts: its header, its timeline of every incident and the first incident's card.
    header = page[page.index("<header>"):page.index("</header>") + len("</header>")]
    assert header in view and "66 findings" in header
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg in view
    card = page[page.index('<div class="card" id="incident-1"'):page.index('<div class="card" id="incident-2"')]
    assert card in view
    # The first screen: three incidents, the first findings rows, no script, the rest pointed to.
    assert view.count('<div class="card"') == 3 and "3 more incidents" in view
    assert view.count("<tr>") == 1 + SCREEN_FINDINGS and "<script" not in view
    assert 'result.frame(&quot;findings&quot;)' in view and view.startswith('<div class="ddt"><style>')


def test_html_view_of_nothing_found(tmp_path):
    (tmp_path / "quiet.log").write_text("all good\n")
    with analyze([str(tmp_path)], jobs=1) as quiet:
        assert "No LLM-DataDist status codes found." in quiet._repr_html_()
        assert repr(quiet).startswith("<Analysis: 0 findings")


def test_a_jupyter_kernel_shows_the_html_view_and_the_one_line_repr(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [f"from analyzer import analyze\nresult = analyze([{str(SAMPLES)!r}], jobs=1)\nresult",
             "print(repr(result))\nresult.frame('incidents')[['id', 'lead_node', 'lead_role']]"]
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(book, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = book.cells[0].outputs[0]
    assert shown["output_type"] == "execute_result"
    html = shown["data"]["text/html"]
    assert html.startswith('<div class="ddt">') and "Incident 1" in html and "lead: socket 111" in html
    assert shown["data"]["text/plain"].startswith("<Analysis: 66 findings") and "\n" not in shown["data"]["text/plain"]
    printed, table = book.cells[1].outputs
    assert printed["text"].startswith("<Analysis: 66 findings")
    assert "prompt-node-1" in table["data"]["text/html"] and "Decoder" in table["data"]["text/plain"]
