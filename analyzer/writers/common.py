"""Wording shared by the human-readable writers."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..core.progress import human_bytes
from ..core.records import Finding
from ..diagnose.recovery import recovered_after
from ..diagnose.story import clock
from ..diagnose.summary import ONGOING, RECOVERED, AlsoCode, Burst, Cause, FoldedRow, Incident, Recovery, Summary
from ..knowledge.messages import action_label, current, noun, t

if TYPE_CHECKING:
    from ..run.analysis import Analysis




def log_name(source: str) -> str:
    """The file (or archive member) name of a source: `plog-1.log` of `b.tar.gz!x/plog-1.log`."""
    return re.split(r"[/!]", source.rstrip("/"))[-1] or source


def node_label(node: str | None, source: str | None, more: int = 0) -> str:
    """What names the node of a finding in a report: its node, else its log's file name (never a
    placeholder); `more`: other logs without a node."""
    if node:
        return node
    if not source:
        return t("logs_without_node")
    return log_name(source) + (t("and_other_logs", n=plural(more, "other log")) if more else "")


def describe_code(code: str, name: str | None) -> str:
    return f"{name} ({code})" if name else t("unknown_code", code=code)


def short_source(source: str, width: int, keep: str | None = None) -> str:
    """A path that fits `width` where it can: the file (or member) name and the node folder
    (`keep`, else the first folder that names a node) stay whole; the folders in between are
    dropped from the middle outward, shown as `…`. A name longer than `width` is kept whole."""
    if len(source) <= width:
        return source
    parts = re.split(r"([/!])", source)  # [name, sep, name, sep, ..., file]
    names, seps = parts[0::2], parts[1::2]
    last = len(names) - 1
    node = next((i for i, n in enumerate(names[:-1]) if keep and n == keep), None)
    if node is None:
        node = next((i for i, n in enumerate(names[:-1]) if _NODEISH.search(n)), 0)
    kept = set(range(node + 1)) | {last}

    def text(chosen: set[int]) -> str:
        out, gap = "", False
        for i, name in enumerate(names):
            if i in chosen:
                out += ("…" + seps[i - 1] if gap else "") + name + (seps[i] if i < last else "")
                gap = False
            else:
                gap = True
        return out

    # Drop leading folders above the node first when even node + file does not fit.
    while len(text(kept)) > width and min(kept) < node:
        kept.discard(min(kept))
    for i in range(last - 1, node, -1):  # add back the folders nearest the file while they fit
        if len(text(kept | {i})) > width:
            break
        kept.add(i)
    return text(kept)


_NODEISH = re.compile(r"(?i)node|host|worker|server|^(?:p|d)\d|prefill|decode|prompt")


class Style:
    """Terminal colours (ANSI), or none: every method returns its text unchanged without colour."""

    COLORS = {"free-memory": "31", "check-network": "35", "relink": "33", "retry": "36", "retry-later": "36",
              "check-link-state": "33", "fix-params": "34", "check-cache": "34", "collect-logs": "37"}

    def __init__(self, color: bool) -> None:
        self.color = color

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def lead(self, text: str) -> str:
        return self._sgr("1;33", text)

    def action(self, word: str) -> str:
        return self._sgr("1;" + self.COLORS.get(word, "37"), word)

    def head(self, text: str, word: str) -> str:
        return self._sgr("1;" + self.COLORS.get(word, "37"), text)


def span_of(start: str | None, end: str | None) -> str:
    """`2025-11-12 03:40:01.200-03:40:04`: an incident's time span, the date once."""
    if not start:
        return t("no_timestamp")
    first = start.replace("T", " ")[:23]
    if not end or end == start:
        return first
    return first + "-" + (end[11:23] if end[:10] == start[:10] else end.replace("T", " ")[:23])


def context_lines(analysis: Analysis, source: str, line: int) -> list[tuple[int, str]]:
    """The lines around a lead read back from its source (`-C N`), when the report asked for them."""
    return list(analysis.context.get((source, line), ()))


def describe_api(api: str | None, evidence: str | None, api_line: int | None = None) -> str:
    if not api:
        return t("api_unknown")
    known = ("func", "tag", "message", "traceback", "nearby")
    where = t(f"evidence_{evidence}") if evidence in known else (evidence or "")
    if api_line is not None:
        where += f" {api_line}"
    return t("from_api", api=api, where=where)


def action_words(action: str) -> str:
    """An action id as a report shows it: the id in English; its words and the id in Chinese."""
    return action if current() == "en" else f"{action_label(action)}（{action}）"


def recoverable_word(value: bool | None) -> str:
    return t({True: "recoverable_yes", False: "recoverable_no", None: "recoverable_unknown"}[value])


# English nouns whose entry in messages.yaml (`nouns:`) has another name
_NOUN_KEYS = {"generic LLM_FAILED echo": "echo", "file or folder": "excluded", "API": "api"}


def plural(n: int, word: str, words: str | None = None) -> str:
    """`3 findings` (or `3 条发现`): a count and its noun in the report's language."""
    if current() != "en":
        return noun(n, _NOUN_KEYS.get(word, word.replace(" ", "_")))
    return f"{n:,} {word if n == 1 else (words or word + 's')}"




def inputs_line(analysis: Analysis) -> str:
    i = analysis.inputs
    s = analysis.summary
    return (t("inputs_line", findings=plural(s.findings, "finding"), unrecoverable=f"{s.unrecoverable:,}",
              files=plural(i.files, "file"), lines=plural(i.lines, "line"), size=human_bytes(i.bytes))
            + (t("inputs_skipped", n=plural(len(i.skipped), "input")) if i.skipped else "")
            + (t("inputs_notes", n=plural(len(set(i.notes)), "note")) if i.notes else "")
            + (t("inputs_excluded", n=plural(i.excluded, "file or folder", "files or folders")) if i.excluded else "")
            + (t("inputs_outside", n=plural(i.outside_window, "finding")) if i.outside_window else ""))


def describe_causes(causes: Sequence[Cause]) -> str:
    """`hccl 9 (HCCL timeout) at line 55; runtime 507046 (stream sync timeout) at line 67`."""
    return t("story_join").join(t("cause", family=c.family, code=c.code, meaning=c.meaning, line=c.line)
                                for c in causes)


def describe_also(also: Sequence[AlsoCode], limit: int | None = None) -> str:
    """The other codes of a burst, each with its own action when it differs (the first `limit`,
    then how many more)."""
    items = []
    for a in also[:limit]:
        text = a.name or t("unknown_short", code=a.code)
        if a.api:
            text += t("also_from", api=a.api)
        text += f" -> {a.action}"
        if a.recoverable is False:
            text += t("also_not_recoverable")
        items.append(text)
    if len(also) > len(items):
        items.append(t("and_more_codes", n=plural(len(also) - len(items), "more code")))
    return t("list_join").join(items)


def describe_burst_extras(burst: Burst, limit: int | None = None) -> str:
    """`3 repeats of the lead; 2 generic LLM_FAILED echoes; also X from API -> action, ...`
    (empty when none)."""
    notes = []
    if burst.repeats:
        notes.append(t("repeats", n=plural(burst.repeats, "repeat")))
    if burst.echoes:
        notes.append(t("echoes", n=plural(burst.echoes, "generic LLM_FAILED echo", "generic LLM_FAILED echoes")))
    if burst.also:
        notes.append(t("also", items=describe_also(burst.also, limit)))
    return t("story_join").join(notes)


def known_errors_lines(analysis: Analysis, limit: int = 20) -> list[str]:
    """What --baseline and --suppressions hid, and why (empty when neither was used)."""
    known = analysis.known_errors
    if known is None:
        return []
    out = []
    if known.baseline is not None:
        out.append(f"baseline {known.baseline}: {known.new} new, {len(known.known)} known (not reported), "
                   f"{len(known.gone)} gone")
        for g in known.gone[:limit]:
            out.append(f"  gone: {g.name or g.code} from {g.api or 'API unknown'} [{g.rule}], was at {g.example}")
        if len(known.gone) > limit:
            out.append(f"  ... {len(known.gone) - limit} more gone (see --format json)")
    if known.suppressions is not None:
        hidden: dict[int, int] = {}
        by_index = {}
        for _, s in known.suppressed:
            hidden[s.index] = hidden.get(s.index, 0) + 1
            by_index[s.index] = s
        out.append(f"suppressions {known.suppressions}: {plural(len(known.suppressed), 'finding')} hidden")
        for index in sorted(hidden):
            s = by_index[index]
            until = f" (until {s.expires.isoformat()})" if s.expires else ""
            out.append(f"  {s.describe()} hid {plural(hidden[index], 'finding')}: {s.reason}{until}")
        for s in known.expired:
            out.append(f"  {s.describe()} EXPIRED on {s.expires}: hides nothing now ({s.reason})")
    return out


STORM_FINDINGS = 1000  # a storm: at least this many findings ...
STORM_FOLD = 10  # ... folding into at most one row per this many findings


def is_storm(s: Summary) -> bool:
    """So many findings, repeating so much, that a human-readable report shows groups, not each."""
    return s.findings >= STORM_FINDINGS and s.findings >= STORM_FOLD * len(s.folded)


def row_time(row: FoldedRow) -> str:
    """A one-finding row's time: its own stamp, else `~` and the time read from the lines before
    it (as the text report's `~...`), else empty."""
    if row.first_timestamp:
        return row.first_timestamp
    return f"~{row.first_seen}" if row.first_seen else ""


def fold_span(row: FoldedRow) -> str:
    """`x1,234 to plog-1.log:9001, 2025-11-12T03:40:05 .. 2025-11-12T03:41:10` for a folded row."""
    last = f"{row.last_line}" if row.last_source == row.first_source else f"{row.last_source}:{row.last_line}"
    span = f"x{row.count:,} to line {last}" if row.last_source == row.first_source else f"x{row.count:,} to {last}"
    if row.first_seen:
        span += f", {row.first_seen}" + (f" .. {row.last_seen}" if row.last_seen != row.first_seen else "")
    return span


def version_rows(analysis: Analysis) -> list[tuple[str, list[tuple[str, str]]]]:
    """(node, [(kind, versions)]) for each node whose logs name a version (CANN, driver,
    llm_datadist, HIXL, vLLM, ...), by node name; several versions of one kind joined by `/`."""
    from ..core.observations import VERSION_KINDS

    rows = []
    for node in sorted(analysis.links, key=lambda n: n or ""):
        versions = analysis.links[node].versions
        found = [(kind, "/".join(sorted(versions[kind]))) for kind in VERSION_KINDS if versions.get(kind)]
        if found:
            rows.append((node or t("logs_without_node"), found))
    return rows


def incident_states(incidents: Sequence[Incident]) -> str:
    """`6 (5 ongoing, 1 recovered), still broken first`: what is broken now, first."""
    ongoing = sum(1 for i in incidents if i.state == ONGOING)
    if ongoing == len(incidents):
        return t("states_all_ongoing", n=len(incidents))
    return t("states_mixed", n=len(incidents), ongoing=ongoing, recovered=len(incidents) - ongoing)


def incidents_title(incidents: Sequence[Incident]) -> str:
    """`Incidents: 6 (5 ongoing, 1 recovered), still broken first`."""
    return t("incidents_title", states=incident_states(incidents))


def state_word(state: str) -> str:
    """`ongoing` / `recovered` in the run's language."""
    return t(f"state_{state}")


def recovery_sentence(recovery: Recovery) -> str:
    """`recovered 2.1 s after its first error (03:41:33.061, link-success)`."""
    took = recovered_after(recovery)
    when = clock(recovery.timestamp)
    said = t("recovered_after", took=took) if took else state_word(RECOVERED)
    return f"{said} ({when + ', ' if when != '?' else ''}{recovery.proof})"


def finding_states(analysis: Analysis) -> Callable[[Finding], str]:
    """The state of a finding: that of the bursts whose lines and process hold it (ongoing when
    any of them is, or when no kept burst holds it)."""
    by_source: dict[str, list[Burst]] = {}
    for b in analysis.summary.bursts:
        by_source.setdefault(b.source, []).append(b)
    starts = {}
    for source, items in by_source.items():
        items.sort(key=lambda b: (b.first_line, b.last_line))
        starts[source] = [b.first_line for b in items]

    def state(f: Finding) -> str:
        items = by_source.get(f.source)
        if not items:
            return ONGOING
        at = bisect.bisect_right(starts[f.source], f.line)
        covering = [b for b in items[max(0, at - 16):at] if b.last_line >= f.line]
        mine = [b for b in covering if b.pid == f.pid] or covering
        return RECOVERED if mine and all(b.state == RECOVERED for b in mine) else ONGOING
    return state
