"""API context: which API returned a code, and on what evidence.

Stage: detect (API context). For a hit it looks, in order, at the same line (plog `Func:` field, a Python
`[func]` tag, API names in the message), then at the frames of the Python traceback that the
line ends, then at the nearest earlier line of the same process/thread within a bounded window.
It also decides whether a generic LLM_FAILED hit is LLM-DataDist's (`GenericPolicy`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.headers import Header, header_for, parse_header, record_headers
from ..core.times import parse_ts
from ..knowledge.catalog import ApiTable
from ..knowledge.compiled import LazyPattern
from ..scan.blocks import HISTORY_BYTES

if TYPE_CHECKING:
    from ..inputs import YearHint

# How far "nearest earlier line" may be: one operation's few lines, not the last API call of the thread.
API_LOOKBACK_LINES = 12
_TAG = re.compile(r"\[([A-Za-z_][\w.:]*)\]")
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in ([\w.<>]+)')
_TRACEBACK_START = "Traceback (most recent call last)"
# A line that says it belongs to LLM-DataDist even without an API name in it.
_LLM_MARKER = re.compile(r"(?i)llm[_ ]?data[_ ]?dist|\bllm_\w+\.(?:cc|h)\b|data_cache_engine|\bhixl\b"
                         r"|LLMStatusCode|LLMException")

ECHO_SECONDS = 2.0  # how soon after a specific code a generic failure in its thread is its echo
ECHO_MEMORY = 64  # specific codes remembered per stream for that test

Lookback = Callable[[], Sequence[tuple[int, str]]]


@dataclass(frozen=True, slots=True)
class ApiContext:
    api: str | None
    evidence: str | None  # func | tag | message | traceback | nearby
    line: int | None


class ApiResolver:
    """Resolves API context with one compiled spelling pattern built from `analyzer/data/apis.yaml`."""

    def __init__(self, apis: ApiTable):
        self.apis = apis
        words = self._words = sorted(apis.spellings, key=len, reverse=True)
        # Spellings with a space ("Initialize LlmDataDist") match with any run of blanks.
        alternation = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
        # Whole words only: `copy_cache` must not match inside `LLM_COPY_CACHE_FAILED`, but a
        # leading underscore (`_pull_blocks`) is allowed.
        # Compiled on first use (~9 ms): under the compiled core, most runs never resolve in Python.
        self._spelling = LazyPattern(r"(?i)(?<![A-Za-z0-9_])_*(" + alternation + r")(?![A-Za-z0-9_])", "re")
        # The last message searched: (line, where its message starts, its tag API, spelling starts, APIs).
        # Every hit of one line asks again; a line of a million codes is searched once, not once a hit.
        self._last: tuple[str, int, tuple[str, str] | None, list[int], list[str]] | None = None

    def core_spec(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str], list[str], str, str, str]:
        """The table as the compiled core's engine reads it (`ddtriage_core.Detector`): spellings,
        tags, shared names, the spellings in the order the alternation tries them, and the tag,
        frame and LLM-DataDist marker patterns (the spelling pattern's look-arounds are walked
        there by hand, see `core/src/apis.rs`)."""
        apis = self.apis
        return (sorted(apis.spellings.items()), sorted(apis.tags.items()), sorted(apis.shared), list(self._words),
                _TAG.pattern, _FRAME.pattern, _LLM_MARKER.pattern)

    # -- evidence on one line -------------------------------------------------------------
    def on_line(self, line: str, header: Header, offset: int | None = None) -> tuple[str, str] | None:
        """(api, evidence) from the line itself, or None. `offset` is the hit's position."""
        if header.func:
            api = self.apis.resolve_token(header.func)
            if api:
                return api, "func"
        last = self._last
        if last is None or last[0] is not line or last[1] != header.msg_start:
            last = self._last = (line, header.msg_start, *self._searched(line[header.msg_start:]))
        _, _, tagged, starts, apis = last
        if tagged:
            return tagged
        if not starts:
            return None
        if offset is None:
            return apis[0], "message"
        # The spelling nearest the hit; of two as near, the first.
        rel = offset - header.msg_start
        i = bisect_left(starts, rel)
        if i == len(starts) or (i > 0 and rel - starts[i - 1] <= starts[i] - rel):
            i -= 1
        return apis[i], "message"

    def _searched(self, msg: str) -> tuple[tuple[str, str] | None, list[int], list[str]]:
        """(the first tag naming an API, the starts of API spellings, their APIs) of a message."""
        for m in _TAG.finditer(msg):
            api = self.apis.resolve_token(m.group(1))
            if api:
                return (api, "tag"), [], []
        starts, apis = [], []
        for m in self._spelling.finditer(msg):
            starts.append(m.start())
            apis.append(self.apis.spellings[re.sub(r"\s+", " ", m.group(1)).lower()])
        return None, starts, apis

    def mentions_llm(self, line: str) -> bool:
        """Whether the line names LLM-DataDist (a source file, a class, the library) itself."""
        return _LLM_MARKER.search(line) is not None

    # -- full resolution ---------------------------------------------------------------------
    def resolve(self, line: str, header: Header, offset: int, lookback: Lookback,
                year: YearHint | None) -> ApiContext:
        found = self.on_line(line, header, offset)
        if found:
            return ApiContext(found[0], found[1], None)
        earlier = lookback()
        api, line_no = self._from_traceback(header, earlier, year)
        if api:
            return ApiContext(api, "traceback", line_no)
        for line_no, text in reversed(earlier[-API_LOOKBACK_LINES:]):
            other = header_for(record_headers(text, year), len(text))
            if not same_thread(header, other):
                continue
            found = self.on_line(text, other)
            if found:
                return ApiContext(found[0], "nearby", line_no)
        return ApiContext(None, None, None)

    def _from_traceback(self, header: Header, earlier: Sequence[tuple[int, str]],
                        year: YearHint | None) -> tuple[str | None, int | None]:
        """Innermost recognisable frame of the traceback that ends right before this line."""
        frames: list[tuple[int, str]] = []
        saw_start = False
        for line_no, text in reversed(earlier):
            other = parse_header(text, year)
            if header.pid and other.pid and other.pid != header.pid:
                continue  # another worker's line interleaved into ours
            body = text[other.msg_start:] if other.fmt == "vllm" else text
            frame = _FRAME.match(body)
            if frame:
                frames.append((line_no, frame.group(1)))
                continue
            if _TRACEBACK_START in body:
                saw_start = True
                break
            if body.startswith((" ", "\t")) or not body.strip() or body.lstrip().startswith(("^", "~")):
                continue  # source line under a frame, caret markers, blank
            break
        if not frames and not saw_start:
            return None, None
        for line_no, name in frames:  # collected innermost first
            api = self.apis.resolve_token(name)
            if api:
                return api, line_no
        return None, None


def same_thread(a: Header, b: Header) -> bool:
    """Whether two records may come from the same process/thread (unknown matches anything);
    two pods never share one, whatever their pids."""
    if a.pod and b.pod and a.pod != b.pod:
        return False
    if a.pid and b.pid and a.pid != b.pid:
        return False
    return not (a.tid and b.tid and a.tid != b.tid)


class GenericPolicy:
    """Whether a generic LLM_FAILED hit is LLM-DataDist's failure or the graph engine's own.

    One per stream: it remembers the specific codes seen lately, because a generic failure
    right after one of them in the same thread is that code's echo."""

    def __init__(self, resolver: ApiResolver) -> None:
        self.resolver = resolver
        self.shared = resolver.apis.shared
        self.recent: deque[tuple[int, int, Header]] = deque(maxlen=ECHO_MEMORY)

    def note_specific(self, line_no: int, offset: int, header: Header) -> None:
        """A specific (non-generic) code was found at this line (byte offset) and record."""
        self.recent.append((line_no, offset, header))

    def keeps(self, ctx: ApiContext, text: str, line_no: int, offset: int, header: Header) -> bool:
        """Whether a generic hit on this line is a finding: its API ties it to LLM-DataDist, the
        line names LLM-DataDist, or it echoes a specific code just before it."""
        return (self.ties_to_llm_datadist(ctx) or self.resolver.mentions_llm(text)
                or self.echoes(line_no, offset, header))

    def ties_to_llm_datadist(self, ctx: ApiContext) -> bool:
        """Whether API evidence alone makes a generic failure LLM-DataDist's: an API read from the
        line or its traceback (not a nearby line) whose name other components do not use."""
        return bool(ctx.api) and ctx.evidence != "nearby" and ctx.api not in self.shared

    def echoes(self, line_no: int, offset: int, header: Header) -> bool:
        """A generic failure right after a specific code in the same thread (a few lines, a
        moment) is its echo; a graph-engine failure half a minute later is not."""
        for seen_line, seen_offset, seen_header in reversed(self.recent):
            if line_no - seen_line > API_LOOKBACK_LINES or offset - seen_offset > HISTORY_BYTES:
                return False
            if same_thread(header, seen_header):
                t0, t1 = parse_ts(seen_header.timestamp), parse_ts(header.timestamp)
                return not (t0 and t1 and abs((t1 - t0).total_seconds()) > ECHO_SECONDS)
        return False
