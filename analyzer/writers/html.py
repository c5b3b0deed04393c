"""HTML report: one self-contained page (no network, no external assets) that tells the story.

    <header> inputs, counts
    <svg>    timeline: one lane per node, grouped by incident; markers coloured by action; the lead ringed
    <section> incidents: story, lead, action, context lines
    <table>  related errors, findings (folded rows): sortable by any column (a little inline JS)

Every name and log text is escaped (`safe.html`): nothing from a bundle can open a tag or a script.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from ..knowledge.messages import language, t
from . import safe
from .common import (
    context_lines,
    incidents_title,
    inputs_line,
    plural,
    recovery_sentence,
    row_time,
    span_of,
    state_word,
    version_rows,
)

if TYPE_CHECKING:
    from ..core.observations import RelatedEvent
    from ..diagnose.summary import Burst, FoldedRow, Incident
    from ..run.analysis import Analysis

name = "html"
suffix = ".html"

MAX_ROWS = 2000  # rows per table
COLOURS = {"free-memory": "#d7263d", "check-network": "#7b2cbf", "relink": "#f49d37", "retry": "#2a9d8f",
           "retry-later": "#2a9d8f", "check-link-state": "#e76f51", "fix-params": "#3a86ff", "check-cache": "#3a86ff",
           "unlink-first": "#8d6e63", "enable-option": "#6c757d", "cleanup-prompt": "#8d6e63",
           "collect-logs": "#5c677d", "none": "#adb5bd"}
LANE, LEFT, WIDTH = 26, 190, 1100  # timeline geometry (px)

# Every rule is scoped to `.ddt` (the page's <body>, the notebook view's <div>), so the view
# cannot restyle the notebook around it.
_STYLE = """
.ddt{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC","Noto Sans SC","PingFang SC",
"Microsoft YaHei",sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
.ddt header{background:#1d2330;color:#fff;padding:18px 28px}.ddt header h1{margin:0 0 4px;font-size:22px;color:#fff}
.ddt header p{margin:0;color:#c8ccd6}.ddt .chips span{display:inline-block;margin:8px 8px 0 0;padding:3px 10px;
border-radius:12px;background:#2e3648;font-size:13px}.ddt main{padding:20px 28px;max-width:1240px}
.ddt h2{font-size:18px;margin:26px 0 10px}.ddt .card{background:#fff;border-radius:8px;padding:14px 18px;
margin:0 0 14px;box-shadow:0 1px 3px rgba(0,0,0,.08);border-left:6px solid #5c677d}.ddt .card h3{margin:0 0 6px;
font-size:16px}.ddt .meta{color:#5c677d;font-size:13px}.ddt .story{margin:8px 0;font-size:15px}
.ddt .action{display:inline-block;color:#fff;border-radius:4px;padding:1px 8px;font-size:12px;font-weight:600;
margin-right:6px}.ddt pre{background:#1d2330;color:#e6e9ef;padding:10px 12px;border-radius:6px;overflow-x:auto;
font-size:12.5px}.ddt pre .lead{background:#5a4a00;color:#ffe066;display:block}.ddt table{border-collapse:collapse;
width:100%;background:#fff;font-size:13px;box-shadow:0 1px 3px rgba(0,0,0,.08)}.ddt th,.ddt td{padding:5px 8px;
border-bottom:1px solid #e3e6ec;text-align:left;vertical-align:top}.ddt th{background:#e9ecf2;cursor:pointer;
user-select:none;position:sticky;top:0}.ddt table.sortable th:after{content:" \\2195";color:#9aa3b5}
.ddt td code{font-size:12px;word-break:break-all}.ddt .svgbox{background:#fff;border-radius:8px;padding:8px;
box-shadow:0 1px 3px rgba(0,0,0,.08);overflow-x:auto}.ddt .legend span{display:inline-block;margin:0 12px 6px 0;
font-size:12.5px}.ddt .legend i{display:inline-block;width:11px;height:11px;border-radius:6px;margin-right:4px;
vertical-align:-1px}.ddt #js-errors{display:none}.ddt .none{color:#5c677d}
.ddt .state{font-size:12px;padding:1px 8px;border-radius:9px;color:#fff;background:#b3261e}
.ddt .state.recovered{background:#2e7d32}
"""

_SCRIPT = """
window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message));
var b=document.getElementById('js-errors');b.textContent=window.__errors.join('\\n');b.setAttribute('data-count',
window.__errors.length);});
document.addEventListener('DOMContentLoaded',function(){document.querySelectorAll('table.sortable').forEach(
function(t){t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows),up=th.getAttribute('data-dir')!=='up';
rows.sort(function(a,b){var x=a.cells[i].getAttribute('data-v')||a.cells[i].textContent,
y=b.cells[i].getAttribute('data-v')||b.cells[i].textContent,nx=parseFloat(x),ny=parseFloat(y);
var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return up?c:-c;});
rows.forEach(function(r){body.appendChild(r);});th.setAttribute('data-dir',up?'up':'down');});});});
document.body.setAttribute('data-ready','1');});
"""


def _e(value: object) -> str:
    return safe.html(value)


def _seconds(ts: str | None) -> float | None:
    try:
        return datetime.fromisoformat(ts).timestamp() if ts else None
    except ValueError:
        return None


def write(analysis: Analysis, out: TextIO) -> None:
    with language(analysis.rules.lang):
        _write(analysis, out)


def _write(analysis: Analysis, out: TextIO) -> None:
    s = analysis.summary
    html_lang = "zh-CN" if analysis.rules.lang == "zh" else "en"
    out.write(f"<!DOCTYPE html>\n<html lang=\"{html_lang}\"><head><meta charset=\"utf-8\">"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
              "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
              f"<title>{_e(t('h_title'))}</title><style>{_STYLE}</style><script>{_SCRIPT}</script></head>"
              "<body class=\"ddt\">\n")
    out.write(_header(analysis) + "<main>\n<pre id=\"js-errors\" data-count=\"0\"></pre>\n")
    out.write(_diagnosis(analysis, s.incidents))
    out.write(_related_table(analysis.related))
    out.write(_findings_table(analysis))
    out.write(_versions_table(analysis))
    out.write("</main></body></html>\n")


SCREEN_INCIDENTS = 3  # incident cards on the notebook view's first screen
SCREEN_FINDINGS = 10  # folded findings rows on it


def first_screen(analysis: Analysis) -> str:
    """The first screen of the report, as a fragment for a notebook (`Analysis._repr_html_`): the
    header, the timeline, the first incidents and the first findings rows, with the page's own
    (scoped) style and no script; the rest is a count that points to the frames."""
    with language(analysis.rules.lang):
        return _first_screen(analysis)


def _first_screen(analysis: Analysis) -> str:
    s = analysis.summary
    shown = s.incidents[:SCREEN_INCIDENTS]
    more = len(s.incidents) - len(shown)
    tail = (f'<p class="none">{plural(more, "more incident")}: <code>result.frame("incidents")</code>, '
            "or the HTML report.</p>\n") if more else ""
    return (f'<div class="ddt"><style>{_STYLE}</style>' + _header(analysis) + "<main>\n"
            + _diagnosis(analysis, shown, s.incidents) + tail
            + _findings_table(analysis, SCREEN_FINDINGS, 'result.frame("findings")') + "</main></div>")


def _header(analysis: Analysis) -> str:
    s = analysis.summary
    chips = [plural(s.findings, "finding"), t("h_not_recoverable_chip", n=s.unrecoverable),
             plural(len(s.incidents), "incident"), plural(len(analysis.related), "related error"),
             plural(len(s.nodes), "node")]
    return (f"<header><h1>{_e(t('h_title'))}</h1><p>{_e(inputs_line(analysis))}</p><div class=\"chips\">"
            + "".join(f"<span>{_e(c)}</span>" for c in chips) + "</div></header>")


def _diagnosis(analysis: Analysis, cards: Sequence[Incident], timed: Sequence[Incident] | None = None) -> str:
    """The timeline of `timed` (default: `cards`) and the cards of `cards`, or the no-codes line."""
    s = analysis.summary
    timed = cards if timed is None else timed
    if timed:
        return (f"<h2>{_e(t('h_timeline'))}</h2>\n" + _legend(timed) + "<div class=\"svgbox\">"
                + timeline(timed, s.bursts, analysis.related) + "</div>\n"
                f"<h2>{_e(incidents_title(timed))}</h2>\n" + "".join(_incident(analysis, inc) for inc in cards))
    return "" if s.findings else f"<h2>{_e(t('no_findings'))}</h2>\n"


def _legend(incidents: Sequence[Incident]) -> str:
    words = sorted({i.action_word for i in incidents})
    return ("<div class=\"legend\">" + "".join(
        f"<span><i style=\"background:{COLOURS.get(w, '#5c677d')}\"></i>{_e(w)}</span>" for w in words)
        + f"<span><i style=\"background:#fff;border:2px solid #1d2330\"></i>{_e(t('h_lead_legend'))}</span>"
        f"<span>{t('h_marks_legend')}</span></div>\n")


def timeline(incidents: Sequence[Incident], bursts: Sequence[Burst], related: Sequence[RelatedEvent]) -> str:
    """An inline SVG: per incident a block of lanes (one per node) on its own time axis; bursts are
    bars or dots, related errors diamonds, coloured by the incident's action; the lead is ringed."""
    parts: list[str] = []
    y = 10
    for inc in incidents:
        t0, t1 = _seconds(inc.start), _seconds(inc.end)
        if t0 is None or t1 is None:
            continue
        span = max(t1 - t0, 0.001)
        colour = COLOURS.get(inc.action_word, "#5c677d")

        def x(t: float | None, t0: float = t0, span: float = span) -> float:
            at = LEFT + 10 + ((t if t is not None else t0) - t0) / span * (WIDTH - LEFT - 40)
            return min(max(at, LEFT + 6), WIDTH - 26)  # a whole-second stamp may sit just outside

        parts.append(f'<text x="8" y="{y + 14}" font-weight="700" font-size="13">{_e(t("h_incident", n=inc.id))}</text>'
                     f'<text x="{LEFT + 10}" y="{y + 14}" font-size="12" fill="#5c677d">'
                     f'{_e(span_of(inc.start, inc.end))} · {_e(plural(inc.findings, "finding"))}</text>')
        y += 22
        lanes = {node: y + i * LANE for i, node in enumerate(inc.nodes)}
        for node, ly in lanes.items():
            parts.append(f'<rect x="{LEFT}" y="{ly}" width="{WIDTH - LEFT - 20}" height="{LANE - 6}" rx="4" '
                         f'fill="#f1f3f7"/><text x="8" y="{ly + 15}" font-size="12.5">{_e(node)}</text>')
        for i in inc.bursts:
            b = bursts[i]
            ly = lanes.get(b.node or "(no node)", y)
            a, z = x(_seconds(b.first_seen)), x(_seconds(b.last_seen))
            title = _e(f"{b.lead.name or b.lead.code}{t('h_from', api=b.lead.api or '?')} · "
                       f"{b.source}:{b.first_line} · {plural(b.findings, 'finding')}")
            if z - a > 6:
                parts.append(f'<rect x="{a:.1f}" y="{ly + 5}" width="{z - a:.1f}" height="{LANE - 16}" rx="5" '
                             f'fill="{colour}" fill-opacity="0.75"><title>{title}</title></rect>')
            else:
                parts.append(f'<circle cx="{a:.1f}" cy="{ly + (LANE - 6) / 2}" r="5.5" fill="{colour}">'
                             f'<title>{title}</title></circle>')
        for k in inc.related:
            e = related[k]
            ly = lanes.get(e.node or "(no node)", y)
            cx, cy = x(_seconds(e.timestamp)), ly + (LANE - 6) / 2
            parts.append(f'<path d="M{cx:.1f} {cy - 6:.1f}l6 6l-6 6l-6-6z" fill="#1d2330" fill-opacity="0.8">'
                         f'<title>{_e(f"{e.family} {e.code} ({e.meaning}) · {e.source}:{e.line}")}</title></path>')
        lead = inc.lead
        ly = lanes.get(lead.node or "(no node)", y)
        lx, cy = x(_seconds(lead.timestamp)), ly + (LANE - 6) / 2
        parts.append(f'<circle cx="{lx:.1f}" cy="{cy}" r="10" fill="none" stroke="#1d2330" stroke-width="2.5">'
                     f'<title>{_e(t("h_lead") + " " + lead.family + " " + lead.code)}</title></circle>'
                     f'<text x="{min(lx + 14, WIDTH - 150):.1f}" y="{cy + 4:.1f}" font-size="11.5" '
                     f'font-weight="700" stroke="#fff" stroke-width="3" paint-order="stroke">'
                     f'{_e(t("h_lead"))} {_e(lead.family)} {_e(lead.code)}</text>')
        y += len(lanes) * LANE + 14
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y}" viewBox="0 0 {WIDTH} {y}" '
            f'role="img" aria-label="timeline of the incidents">' + "".join(parts) + "</svg>")


def _incident(analysis: Analysis, inc: Incident) -> str:
    lead = inc.lead
    colour = COLOURS.get(inc.action_word, "#5c677d")
    shown = context_lines(analysis, lead.source, lead.line)
    lines = "".join(f'<span class="lead">{_e(f"{n:>6}  {text}")}</span>' if n == lead.line
                    else _e(f"{n:>6}  {text}") + "\n" for n, text in shown) if shown \
        else f'<span class="lead">{_e(lead.text)}</span>'
    return (f'<div class="card" id="incident-{inc.id}" style="border-left-color:{colour}">'
            f'<h3>{inc.id}. {_e(" + ".join(inc.nodes))} '
            f'<span class="state {inc.state}">{_e(state_word(inc.state))}</span></h3>'
            f'<div class="meta">{_e(span_of(inc.start, inc.end))} · {_e(plural(inc.findings, "finding"))}'
            f'{_e(t("h_severe")) if inc.severe else ""}</div>'
            f'<p class="story">{_e(inc.story)}</p>'
            + (f'<div class="meta">{_e(recovery_sentence(inc.recovery))}: '
               f'<code>{_e(inc.recovery.source)}:{inc.recovery.line}</code></div>' if inc.recovery else "")
            + f'<div class="meta">{_e(t("h_lead"))} <b>{_e(lead.family)} {_e(lead.code)}</b> ({_e(lead.meaning)}) '
            f'{_e(t("h_on"))} {_e(lead.node or t("h_no_node"))}, <code>{_e(lead.source)}:{lead.line}</code></div>'
            f'<pre>{lines}</pre>'
            f'<p><span class="action" style="background:{colour}">{_e(inc.action_word)}</span>{_e(inc.action)}</p>'
            "</div>\n")


Cell = tuple[str, str | None]  # (HTML of the cell, the value it sorts by when not its text)


def _table(title: str, head: list[str], rows: list[list[Cell]], more: int, where: str = "--format json",
           sortable: bool = True) -> str:
    out = [f"<h2>{_e(title)}</h2>"]
    if not rows:
        return out[0] + f'<p class="none">{_e(t("h_none"))}</p>\n'
    out.append(f'<table class="{"sortable" if sortable else "plain"}"><thead><tr>'
               + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f'<td data-v="{_e(v)}">{cell}</td>' if v is not None else f"<td>{cell}</td>"
                                    for cell, v in row) + "</tr>")
    out.append("</tbody></table>")
    if more:
        out.append(f'<p class="none">{_e(t("h_more_rows", n=more, where=where))}</p>')
    return "".join(out) + "\n"


def _related_table(related: Sequence[RelatedEvent]) -> str:
    rows: list[list[Cell]] = [[(f"<code>{_e(e.source)}:{e.line}</code>", None), (_e(e.node or ""), None),
             (_e(e.timestamp or ""), None), (_e(e.family), None), (_e(e.code), None), (_e(e.meaning), None)]
            for e in related[:MAX_ROWS]]
    return _table(t("h_related"), [t(f"h_col_{c}") for c in ("where", "node", "time", "family", "code", "meaning")],
                  rows, max(0, len(related) - MAX_ROWS))


def _versions_table(analysis: Analysis) -> str:
    """Each node's CANN, driver, llm_datadist, HIXL and framework versions (none: no table)."""
    found = version_rows(analysis)
    if not found:
        return ""
    rows: list[list[Cell]] = [[(_e(node), None), (_e(", ".join(f"{k} {v}" for k, v in versions)), None)]
                              for node, versions in found]
    return _table(t("h_versions"), [t("h_col_node"), t("h_col_versions")], rows, 0)


def _first_seen(row: FoldedRow) -> Cell:
    """A row's first time; a time read from the lines before is marked `~` but sorts as a time."""
    shown = (row.first_seen or "") if row.count > 1 else row_time(row)
    return _e(shown), (row.first_seen if shown.startswith("~") else None)


def _findings_table(analysis: Analysis, limit: int = MAX_ROWS, where: str = "--format json") -> str:
    folded = analysis.summary.folded
    rows: list[list[Cell]] = [[(f"<code>{_e(r.first_source)}:{r.first_line}</code>", None), (_e(r.node or ""), None),
             _first_seen(r), (_e(r.name or r.code), None), (_e(r.api or "-"), None),
             (f'<span class="action" style="background:{COLOURS.get(r.action, "#5c677d")}">{_e(r.action)}</span>',
              r.action), (str(r.count), str(r.count))]
            for r in folded[:limit]]
    table = _table(t("h_findings"), [t(f"h_col_{c}") for c in ("where", "node", "first_seen", "code", "api", "action",
                                                               "count")], rows,
                   max(0, len(folded) - limit), where, sortable=limit == MAX_ROWS)
    sampled = analysis.summary.sampled_fingerprints
    if not sampled:
        return table
    head, _, rest = table.partition("</h2>")  # the note under the heading
    return f'{head}</h2><p class="none">{_e(t("sampled_rows", cap=f"{sampled:,}"))}</p>{rest}'
