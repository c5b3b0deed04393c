"""Issue #18, Markdown: file names, archive members and log text are inert in the Markdown reports.
The reports are rendered with a real CommonMark renderer (markdown-it-py, GFM tables on) and no link,
image, autolink or raw HTML may come from input text: the only HTML is the writer's own
(`<details>`/`<summary>` in the GitHub step summary).
"""

from __future__ import annotations

import io
import os
import re
import zipfile

import pytest
from markdown_it import MarkdownIt

LINE = ("[ERROR] LLMDATADIST(1234,python):2025-11-12-10:00:{s:02d}.123.456 [llm_datadist.cc:100] "
        "PullKvCache failed, ret = 0x5010B001 {tail}\n")
HOSTILE = [
    "x](javascript:alert(1))",
    "[a](javascript:alert(2))",
    "![i](http://evil.example/p.png)",
    "<!-- comment",
    "<http://evil.example/auto>",
    "<evil@example.com>",
    "<img src=x onerror=alert(3)>",
    "`` ` `x` ```",
    "a`](javascript:alert(4))`b",
    "[ref]: javascript:alert(5)",
    "[r][ref]",
    "&#106;avascript:&lt;",
    "*emph* _u_ | pipe \\| \\",
]


def _bundle(tmp_path):
    root = tmp_path / "bundle"
    root.mkdir()
    for n, word in enumerate(HOSTILE):
        name = word.replace("/", "%")  # a file name holds no slash; the rest is as hostile as it gets
        (root / f"{name}.log").write_bytes(LINE.format(s=n, tail=word).encode())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, word in enumerate(HOSTILE):
            z.writestr(f"{word}/member-{n}.log", LINE.format(s=n, tail=f"member {word}"))
    (root / "members.zip").write_bytes(buf.getvalue())
    return root


def _render(*args: str | os.PathLike[str]) -> str:
    from analyzer.cli import cli
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["scan", *map(os.fspath, args), "--jobs", "1"], catch_exceptions=False)
    assert result.exit_code == 1, result.stderr
    return result.stdout


def _unsafe(text: str) -> list[str]:
    md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    md.validateLink = lambda url: True  # markdown-it drops javascript: links itself; GitHub's renderer may not
    found = []

    def walk(tokens):
        for tok in tokens:
            if tok.type in ("link_open", "image"):
                found.append(f"{tok.type} {tok.attrs}")
            if tok.type in ("html_inline", "html_block"):
                own = re.sub(r"<summary>[^<>]*</summary>|</?details>", "", tok.content)
                if own.strip():
                    found.append(f"{tok.type} {tok.content!r}")
            if tok.children:
                walk(tok.children)

    walk(md.parse(text))
    return found


@pytest.mark.parametrize("fmt", ["markdown", "github-summary"])
def test_hostile_names_and_text_are_inert(tmp_path, fmt):
    root = _bundle(tmp_path)
    text = _render(root, "--format", fmt, "-C", "2")
    assert "javascript" in text  # the names are shown, and what they hold ...
    unsafe = _unsafe(text)
    assert unsafe == [], "\n".join(unsafe)  # ... opens no link, image or HTML
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<a " not in html and "<img" not in html and "<!--" not in html


def test_the_renderer_check_catches_a_live_link():
    assert _unsafe("| a | [x](javascript:alert(1)) |\n|---|---|\n") != []
    assert _unsafe("see <http://x.example> and <!-- x -->\n") != []


def test_a_time_column_holds_a_time_or_a_dash_and_one_more_is_singular(tmp_path):
    # "Codes by API" showed a place (`app.log:2`) under "first seen" for a code whose lines print no
    # time; and the count of what a section leaves out read "1 more incidents"
    from analyzer import analyze
    from analyzer.writers import render_report
    from analyzer.writers.markdown import _more

    log = tmp_path / "app.log"
    log.write_text("I20251112 03:40:03.700920 280652 cache_test.cpp:33] AllocateCache cache_id=7 again\n"
                   "AllocateCache failed, ret = 1343270935\n")
    report = render_report("markdown", analyze([str(log)]))
    head = next(i for i, line in enumerate(report.splitlines()) if line.startswith("| count | code"))
    row = report.splitlines()[head + 2].split(" | ")
    assert row[6] == "-" and "app.log:" not in row[6]
    assert _more(1, "more incidents")[-1].startswith("… 1 more incident (")
    assert _more(2, "more incidents")[-1].startswith("… 2 more incidents (")


def test_the_recurring_section_is_in_the_language_asked_for():
    # its heading and table head stayed English under --lang zh, where the text report translates them
    from analyzer import analyze, load_rules
    from analyzer.writers import render_report

    root = os.path.join(os.path.dirname(__file__), "..", "..", "sample_logs")
    zh = render_report("markdown", analyze([root], rules=load_rules(lang="zh")))
    assert "## 跨 3 个日志包、3 个节点重复出现" in zh and "| 日志包 | 节点 | 次数 |" in zh
    assert "Recurring" not in zh and "| bundles | nodes |" not in zh
