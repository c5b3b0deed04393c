"""GitHub Actions: workflow annotations (`--format github`) and a step summary (`github-summary`).

    ::error file=node-2/plog/plog-1.log,line=61,title=ddtriage%3A LLM_WAIT_PROC_TIMEOUT ...::relink: ...
    ::warning file=node-1/app.log,line=7,title=ddtriage%3A LLM_LINK_BUSY ...::retry-later: ...
    ::notice title=ddtriage%3A skipped bundle.zip!secret.log::skipped: encrypted zip member

GitHub shows at most 10 annotations of each level per step and drops the rest, so each level
gets at most 9 finding groups (diagnosis leads first) and, when there are more, a 10th that counts
what was left out. Values are escaped as the Actions toolkit does (`%`, CR, LF; in properties also
`:` and `,`).

The step summary (written to `$GITHUB_STEP_SUMMARY`) is Markdown bounded for GitHub's 1 MiB cap:
every line is cut to `MAX_LINE` characters, long lists are cut with a count of the rest, the
findings table is folded in `<details>`, and the whole stays under `LIMIT` bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from . import safe
from .ci import (
    Group,
    RelatedGroup,
    groups,
    headline,
    level,
    related_fails,
    related_groups,
    related_headline,
    related_message,
)
from .common import describe_api, describe_code, inputs_line, known_errors_lines, plural, recoverable_word

if TYPE_CHECKING:
    from ..core.records import RuleTexts
    from ..run.analysis import Analysis

name = "github"
suffix = ".github.txt"

PER_LEVEL = 10  # GitHub's limit of annotations per level and step


def escape_data(text: str) -> str:
    # CR and LF as the toolkit escapes them; any other control (ESC...) as a visible escape: CI logs
    # render ANSI sequences.
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return safe.terminal(escaped)


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(kind: str, message: str, file: str | None = None, line: int | None = None,
               title: str | None = None) -> str:
    """`::error file=F,line=N,title=T::MESSAGE`."""
    props = []
    if file is not None:
        props.append(f"file={escape_property(file)}")
    if line is not None:
        props.append(f"line={line}")
    if title is not None:
        props.append(f"title={escape_property(title)}")
    return f"::{kind}{' ' + ','.join(props) if props else ''}::{escape_data(message)}"


def _group_annotation(g: Group, texts: RuleTexts) -> str:
    f = g.first
    times = f" ({plural(g.count, 'time')}, {g.where()})" if g.count > 1 else ""
    return annotation(level(f.recoverable), f"{f.action}: {texts.remedy(f.rule)}{times}", f.source, f.line,
                      f"ddtriage: {headline(f)}")


def _related_annotation(g: RelatedGroup, kind: str) -> str:
    e = g.first
    return annotation(kind, related_message(g), e.source, e.line, f"ddtriage: {related_headline(e)}")


def write(analysis: Analysis, out: TextIO) -> None:
    # Per level: (annotation, findings, related errors); related groups after the findings, in the same cap.
    by_level: dict[str, list[tuple[str, int, int]]] = {"error": [], "warning": []}
    for g in groups(analysis):
        by_level[level(g.first.recoverable)].append((_group_annotation(g, analysis.rule_texts), g.count, 0))
    related_kind = "error" if related_fails(analysis) else "warning"
    for r in related_groups(analysis):
        by_level[related_kind].append((_related_annotation(r, related_kind), 0, r.count))
    for kind, found in by_level.items():
        shown = found if len(found) <= PER_LEVEL else found[:PER_LEVEL - 1]
        for text, _, _ in shown:
            out.write(text + "\n")
        if len(found) > len(shown):
            rest = found[len(shown):]
            n, m = sum(x[1] for x in rest), sum(x[2] for x in rest)
            what = " and ".join(([plural(n, "more finding")] if n else [])
                                + ([plural(m, "more related error")] if m else []))
            out.write(annotation(kind, f"{what} in {plural(len(rest), 'more place')} not "
                                 f"annotated (GitHub shows {PER_LEVEL} per level); see the step summary or the "
                                 "JSON report", title=f"ddtriage: {len(rest)} more") + "\n")
    # Skipped inputs are notices: a level of their own, so they take no finding's place.
    skipped = analysis.inputs.to_dict()["skipped"]
    shown_skips = skipped if len(skipped) <= PER_LEVEL else skipped[:PER_LEVEL - 1]
    for x in shown_skips:
        out.write(annotation("notice", f"skipped: {x['reason']}", title=f"ddtriage: skipped {x['source']}") + "\n")
    if len(skipped) > len(shown_skips):
        out.write(annotation("notice", f"{len(skipped) - len(shown_skips)} more inputs (or parts) skipped; see the "
                             "JSON report", title="ddtriage: more skipped") + "\n")
    out.write("ddtriage: " + inputs_line(analysis) + "\n")
    for line in known_errors_lines(analysis):
        out.write("ddtriage: " + line.strip() + "\n")


class _StepSummary:
    """The bounded Markdown step summary (a `Writer`)."""

    name = "github-summary"
    suffix = ".summary.md"
    LIMIT = 1_000_000  # bytes; GitHub refuses a step summary over 1 MiB (1,048,576)
    MAX_LINE = 2000  # characters per line
    MAX_CELL = 300
    MAX_ROWS = 200

    def write(self, analysis: Analysis, out: TextIO) -> None:
        out.write(self.render(analysis))

    @classmethod
    def _cell(cls, value: object) -> str:
        """Untrusted names and text in a cell or list item: no HTML, link, image, row or line (safe.markdown)."""
        return cls._clip(safe.markdown("" if value is None else str(value).replace("\n", " ")))

    @classmethod
    def _code(cls, value: object) -> str:
        """The same inside a `code span`: it cannot close the span or the cell (safe.markdown_code)."""
        return cls._clip(safe.markdown_code("" if value is None else str(value).replace("\n", " ")))

    @classmethod
    def _clip(cls, text: str) -> str:
        return text if len(text) <= cls.MAX_CELL else text[:cls.MAX_CELL - 1] + "…"

    @classmethod
    def _list(cls, items: tuple[str, ...] | list[str], limit: int = 3) -> str:
        head = ", ".join(items[:limit])
        return head + (f" and {len(items) - limit} more" if len(items) > limit else "")

    def render(self, analysis: Analysis) -> str:
        s = analysis.summary
        c = self._cell
        sections: list[list[str]] = [["## ddtriage", "", c(inputs_line(analysis)), ""]]
        known = known_errors_lines(analysis)
        if known:
            sections.append([("  - " if ln.startswith(" ") else "- ") + c(ln.strip()) for ln in known[:50]] + [""])
        skipped = analysis.inputs.to_dict()["skipped"]
        if skipped:
            rows = [f"| {c(x['source'])} | {c(x['reason'])} |" for x in skipped]
            sections.append(self._folded(f"{plural(len(skipped), 'skipped input')}", "| input | reason |\n|---|---|",
                                         rows))
        if not analysis.findings:
            sections.append(["No LLM-DataDist status codes found.", ""])
            return self._join(sections)
        diag = ["### Diagnosis", "", "| # | code | API | action | where | recoverable |", "|---:|---|---|---|---|---|"]
        for n, b in enumerate(s.bursts[:self.MAX_ROWS], 1):
            lead = b.lead
            diag.append(f"| {n} | {c(describe_code(lead.code, lead.name))} | "
                        f"{c(describe_api(lead.api, lead.api_evidence))} | **{lead.action}** | "
                        f"`{self._code(b.source)}:{lead.line}` | {recoverable_word(lead.recoverable)} |")
        if len(s.bursts) > self.MAX_ROWS:
            diag.append(f"\n{len(s.bursts) - self.MAX_ROWS} more bursts: see the JSON report.")
        sections.append(diag + [""])
        codes = ["### Codes by API", "", "| count | code | API | action | rule | sources |",
                 "|---:|---|---|---|---|---|"]
        for r in s.codes[:self.MAX_ROWS]:
            codes.append(f"| {r.count} | {c(r.name or r.code)} | {c(r.api or '-')} | {r.action} | {c(r.rule)} | "
                         f"{c(self._list(r.sources))} |")
        if len(s.codes) > self.MAX_ROWS:
            codes.append(f"\n{len(s.codes) - self.MAX_ROWS} more rows: see the JSON report.")
        sections.append(codes + [""])
        found = groups(analysis)
        rows = [f"| `{self._code(g.first.source)}:{g.first.line}` | {g.count} | {c(headline(g.first))} | "
                f"{c(analysis.rule_texts.remedy(g.first.rule))} |" for g in found]
        sections.append(self._folded(f"{plural(len(found), 'place')} with findings",
                                     "| where | times | finding | remedy |\n|---|---:|---|---|", rows))
        return self._join(sections)

    def _folded(self, title: str, head: str, rows: list[str]) -> list[str]:
        shown = rows[:self.MAX_ROWS]
        more = ["", f"{len(rows) - len(shown)} more: see the JSON report."] if len(rows) > len(shown) else []
        return ["<details>", f"<summary>{title}</summary>", "", head, *shown, *more, "", "</details>", ""]

    def _join(self, sections: list[list[str]]) -> str:
        """Sections in order while they fit under LIMIT; a section that does not fit is dropped whole
        (a cut `<details>` would swallow the rest of the page) and counted."""
        out: list[str] = []
        size, dropped = 0, 0
        for section in sections:
            lines = [ln if len(ln) <= self.MAX_LINE else ln[:self.MAX_LINE - 1] + "…" for ln in section]
            cost = sum(len(ln.encode("utf-8")) + 1 for ln in lines)
            if size + cost > self.LIMIT - 200:
                dropped += 1
                continue
            out += lines
            size += cost
        if dropped:
            out.append(f"*{plural(dropped, 'section')} left out to stay under GitHub's 1 MiB limit: "
                       "see the JSON report.*")
        return "\n".join(out) + "\n"


step_summary = _StepSummary()
