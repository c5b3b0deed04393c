"""The HTML report in a real headless browser (Debian's chromium): it renders, runs its script
without an error, sorts its tables, escapes every log text; a screenshot is kept as an artifact
(tests/artifacts/, not in git). Skips, saying why, only when no browser can be found.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def browser() -> str:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if found is None:
        pytest.skip("no headless browser: install Debian's chromium (`apt-get install -y chromium`; "
                    ".ci/run and make install do it where apt-get and root are available)")
    return found


def run_browser(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"  # a fresh --user-data-dir each time
    return subprocess.run([browser(), *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def report(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["scan", *args, "--quiet", "--fail-on", "never", "-o", f"html:{out}"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return out


def test_sample_logs_page_renders_without_errors_and_a_screenshot_is_kept(tmp_path, in_root):
    page = report(tmp_path, "sample_logs", "-C", "3")
    html = page.read_text(encoding="utf-8")
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html
    assert "<svg" in html and "<script src" not in html and "<link" not in html  # self-contained
    dom = run_browser(page, tmp_path, "--dump-dom", "--virtual-time-budget=2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-ready="1"' in dom.stdout  # the script ran to the end
    assert re.search(r'id="js-errors"[^>]*data-count="0"', dom.stdout), "a script error was reported"
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr.upper().replace("CONSOLE(", "")
    for shown in ("Incident 1", "decode-node-2 + prompt-node-1", "lead: socket 111", "10.0.1.11:26006", "2051",
                  "Related errors", "Findings (repeats folded"):
        assert shown in dom.stdout, shown
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "sample_logs.html.png"
    taken = run_browser(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400")
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]
    print(f"\nscreenshot of the sample_logs HTML report: {shot}")


def test_tables_sort_in_the_browser(tmp_path, in_root):
    page = report(tmp_path, "sample_logs")
    # Click the findings table's "count" header twice (descending order), and write what the first
    # row then says into the DOM, from a script added to a copy of the page.
    probe = """<script>window.addEventListener('load',function(){var t=document.querySelectorAll('table.sortable')[1];
var th=t.tHead.rows[0].cells[6];th.click();th.click();
document.body.setAttribute('data-first-count',t.tBodies[0].rows[0].cells[6].textContent);
th.click();document.body.setAttribute('data-last-count',t.tBodies[0].rows[0].cells[6].textContent);});</script>"""
    copy = tmp_path / "probe.html"
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = run_browser(copy, tmp_path, "--dump-dom", "--virtual-time-budget=2000").stdout
    findings_table = dom.split('<table class="sortable">')[2]
    counts = [int(n) for n in re.findall(r'<td data-v="(\d+)">\d+</td></tr>', findings_table)]
    assert len(counts) > 10 and len(set(counts)) > 1
    assert re.search(r'data-first-count="(\d+)"', dom).group(1) == str(max(counts))
    assert re.search(r'data-last-count="(\d+)"', dom).group(1) == str(min(counts))


def test_every_log_text_is_escaped(tmp_path):
    hostile = ('[ERROR] GE(5,python3):2025-11-12-03:40:05.101.002 [x.cc:1]6 PullKvBlocks: ErrorNo: 1343270913'
               '(request wait to be processed timeout!) <script>document.body.setAttribute("data-pwned","1")'
               '</script><img src=x onerror="document.body.setAttribute(\'data-pwned\',\'2\')"> req_id = "><b>x\n')
    folder = tmp_path / "node-<i>1<b>"
    folder.mkdir()
    (folder / "plog-5_20251112.log").write_text(hostile, encoding="utf-8")
    page = report(tmp_path, str(folder))
    html = page.read_text(encoding="utf-8")
    assert "<script>document" not in html and "<img src=x" not in html and "<i>1<b>" not in html
    assert "&lt;script&gt;document" in html
    dom = run_browser(page, tmp_path, "--dump-dom", "--virtual-time-budget=2000").stdout
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0]
    assert 'data-ready="1"' in dom


def test_notebook_view_renders_in_the_browser_and_keeps_its_style_to_itself(tmp_path):
    """`Analysis._repr_html_` (issue #21) inside a page standing in for a notebook: it renders its
    header, timeline and incidents, and its style restyles nothing outside its own <div>."""
    from analyzer import analyze

    with analyze([str(ROOT / "sample_logs")], jobs=1) as result:
        view = result._repr_html_()
    probe = """<script>window.addEventListener('load',function(){var s=getComputedStyle(document.body),
h=getComputedStyle(document.getElementById('outside')),v=document.querySelector('.ddt');
document.body.setAttribute('data-margin',s.marginTop);document.body.setAttribute('data-bg',s.backgroundColor);
document.body.setAttribute('data-h2',h.fontSize);document.body.setAttribute('data-view-h',String(v.offsetHeight));
document.body.setAttribute('data-svg',String(v.querySelector('svg').getBoundingClientRect().width));});</script>"""
    page = tmp_path / "notebook.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'>" + probe + "</head><body>"
                    "<h2 id='outside'>a notebook's own heading</h2><div class='output'>" + view + "</div>"
                    "</body></html>", encoding="utf-8")
    dom = run_browser(page, tmp_path, "--dump-dom", "--virtual-time-budget=2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    attrs = dict(re.findall(r'data-([\w-]+)="([^"]*)"', body))
    assert attrs["margin"] == "8px" and attrs["bg"] == "rgba(0, 0, 0, 0)"  # the page's body as it was
    assert attrs["h2"] == "24px"  # a heading outside the view keeps the browser's size (the view's are 18px)
    assert int(attrs["view-h"]) > 800 and float(attrs["svg"]) == 1100  # the view is laid out, timeline and all
    for shown in ("Incident 1", "lead: socket 111", "Incidents: 6 (5 ongoing, 1 recovered)", "3 more incidents",
                  "Findings (repeats folded"):
        assert shown in dom.stdout, shown
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "notebook_view.png"
    taken = run_browser(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1800")
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]


def test_chinese_report_renders_cjk_and_a_screenshot_is_kept(tmp_path, in_root):
    """The HTML report in Chinese (`--lang zh`) with Debian's fonts-noto-cjk (make install): the
    page says it is Chinese, renders its headings, and the screenshot is kept to look at."""
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout \
        if shutil.which("fc-list") else ""
    if "Noto Sans CJK" not in fonts:
        pytest.skip("no CJK font: install Debian's fonts-noto-cjk (make install does it where apt-get and root are)")
    page = report(tmp_path, "sample_logs", "-C", "2", "--lang", "zh")
    html = page.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in html and "Noto Sans CJK SC" in html
    dom = run_browser(page, tmp_path, "--dump-dom", "--virtual-time-budget=2000")
    assert dom.returncode == 0 and 'data-ready="1"' in dom.stdout, dom.stderr[-2000:]
    for shown in ("ddtriage 报告", "事件：6 个（5 个未恢复，1 个已恢复），仍未恢复的在前", "已恢复", "事件 1", "首要错误：", "两个节点上共 49 条 LLM-DataDist 发现",
                  "相关错误（运行时、HCCL", "各节点版本", "发现（重复项按指纹和节点折叠）"):
        assert shown in dom.stdout, shown
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "sample_logs.zh.html.png"
    taken = run_browser(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600")
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]
    print(f"\nscreenshot of the Chinese HTML report: {shot}")
