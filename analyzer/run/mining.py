"""`ddtriage mine` as a library call: the unexplained ERROR/WARNING lines of some logs, clustered.

Stage: run (mining). Inputs are read as `analyze` reads them (sources, selection, archives,
envelopes, --since/--until, --tz, --year, --node); a line is taken when its header says ERROR or
WARNING and nothing explains it: no LLM-DataDist code (and so no rule), no neighbour family, no link
fact. Its message (the header's function name, a space, then the text after the header) goes to a
`diagnose.mining.Miner`; the incidents of the same logs (one `analyze` first) rank the templates
by closeness in time. `write_drafts` turns the top templates into draft neighbour families.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

import yaml

from ..core.errors import DDTriageError
from ..core.headers import parse_header
from ..core.records import InputStats, Skipped
from ..core.times import TimeWindow, seconds
from ..detect.observer import node_of
from ..detect.patterns import CodeMatcher
from ..diagnose.mining import WILD, Miner, NearIncident, Template, level_of, near_incidents
from ..inputs import READ_ERRORS, Unpacker, iter_sources, layout_of, year_hint
from ..inputs.streams import Reader, reason
from ..knowledge.envelopes import HEAD_BYTES
from ..knowledge.rules import BUILTIN_RULES_DIR, RuleSet
from ..scan.blocks import core_codes, decode
from ..scan.clock import StreamClock
from ..scan.reassembly import peek
from ..scan.unwrap import clean
from ..scan.unwrap import detect as detect_envelope
from .api import Options, analyze
from .rulecheck import classified_as, neighbours_path

# Where a line of a level we take may be: a level word anywhere, or glog's E/W/F prefix at the
# start of a line. Each is looked for with bytes.find over a whole block (C speed), not per line.
_LEVEL_LITERALS = (b"ERR", b"WARN", b"FATAL", b"CRITICAL")
_GLOG_STARTS = (b"\nE", b"\nW", b"\nF")
_GLOG_LEVEL_AT = re.compile(rb"[EWF]\d{4}")
# The frames and source lines of a traceback (vLLM re-prefixes each with ERROR): the exception at
# its end is what says what failed, and a code on it is found there.
_TRACEBACK_PART = re.compile(r"\s{2,}|\s?(?:Traceback \(most recent call last\)|File \"|[~^]+$)")
MINE_MAX_LINE = 64 * 1024
MINE_CHUNK = 1 << 20


@dataclass
class MineResult:
    """What `mine` found: the miner (its templates ranked), and what was read."""

    miner: Miner
    stats: InputStats = field(default_factory=InputStats)
    taken: int = 0  # unexplained ERROR/WARNING lines clustered
    explained: int = 0  # ERROR/WARNING lines a code, family or link fact explains
    incidents: int = 0

    def top(self, n: int) -> list[Template]:
        return self.miner.templates()[:n]


def mine(paths: Iterable[str | Path], rules: RuleSet | None = None, options: Options | None = None,
         max_templates: int = 1000, similarity: float = 0.5, depth: int = 4, jobs: int = 1) -> MineResult:
    """Cluster the unexplained ERROR/WARNING lines of `paths` into ranked templates."""
    names = [str(p) for p in paths]
    options = options or Options()
    rules = rules or RuleSet.load()
    analysis = analyze(names, rules=rules, options=options, jobs=jobs)
    try:
        spans = []
        for inc in analysis.summary.incidents:
            start, end = seconds(inc.start), seconds(inc.end or inc.start)
            if start is not None:
                spans.append((start, end if end is not None else start))
    finally:
        analysis.close()
    result = MineResult(Miner(depth=depth, similarity=similarity, max_templates=max_templates, incidents=spans),
                        incidents=len(analysis.summary.incidents))
    reader = _LineReader(rules, options, result)
    skipped: list[Skipped] = []
    excluded: list[str] = []
    for source in iter_sources(names, skipped, options.selection, excluded, options.not_these, follow=options.follow):
        reader.source(source)
    result.stats.skipped[:0] = skipped
    result.stats.excluded += len(excluded)
    return result


NEAR_SECONDS = 60.0  # how far before or after an incident a line counts as near it


def unexplained_near(paths: Iterable[str | Path], rules: RuleSet, options: Options,
                     incidents: Iterable[Any], per_incident: int = 3,
                     margin: float = NEAR_SECONDS) -> list[NearIncident]:
    """The top unexplained templates logged within `margin` seconds of each incident (`scan
    --unexplained`): one more read of the inputs, of their ERROR/WARNING lines only."""
    spans: dict[int, tuple[float, float, float]] = {}
    for inc in incidents:
        start, end = seconds(inc.start), seconds(inc.end or inc.start)
        if start is not None:
            spans[inc.id] = (start - margin, (end if end is not None else start) + margin, margin)
    result = MineResult(Miner(incidents=[(lo + m, hi - m) for lo, hi, m in spans.values()]), incidents=len(spans))
    if not spans:
        return []
    reader = _LineReader(rules, options, result, spans)
    for source in iter_sources([str(p) for p in paths], [], options.selection, [], options.not_these,
                               follow=options.follow):
        reader.source(source)
    return near_incidents(result.miner, per_incident)


class _LineReader:
    """Reads every leaf of the inputs and feeds the unexplained ERROR/WARNING lines to the miner."""

    def __init__(self, rules: RuleSet, options: Options, result: MineResult,
                 near: dict[int, tuple[float, float, float]] | None = None) -> None:
        self.rules, self.options, self.result = rules, options, result
        self.near = near  # incident id -> (from, to, margin) seconds: only lines inside one are taken
        self.codes = CodeMatcher(rules.catalog)
        self.codes.use_core(core_codes(self.codes.core_spec()))  # plain ASCII lines' codes in the core, where it runs
        self.neighbours = rules.neighbours
        self.facts = rules.linkfacts
        self.window = TimeWindow.of(options.since, options.until, options.tz)

    def source(self, source: Any) -> None:
        stats = self.result.stats
        try:
            raw = source.open()
        except OSError as exc:
            stats.skipped.append(Skipped(source.name, exc.strerror or str(exc)))
            return
        unpacker = Unpacker(self.options.limits, self.options.selection, stats.skipped, stats.notes)
        try:
            for leaf in unpacker.readable_leaves(source.name, raw, source.path, source.mtime):
                hint = year_hint(leaf.name, leaf.mtime, self.options.year)
                try:
                    self.leaf(leaf.name, leaf.stream, hint)
                except READ_ERRORS as exc:
                    stats.skipped.append(Skipped(leaf.name, reason(exc)))
                stats.files += 1
        finally:
            if not source.is_stdin:
                raw.close()
        stats.excluded += unpacker.excluded

    def leaf(self, name: str, stream: Reader, hint: Any) -> None:
        head, body = peek(stream, HEAD_BYTES)
        unwrapper = detect_envelope(self.rules.envelopes, head, hint) if self.rules.envelopes else None
        clock = StreamClock(hint, hint.guessed, self.options.tz)
        layout = layout_of(name)
        for line_no, raw in _level_lines(body, self.result.stats):
            text = decode(raw)
            if "\x1b" in text:
                text = clean(text)
            records = unwrapper.records(text) if unwrapper is not None else [None]
            for record in records:
                self.record(name, line_no, record.text if record is not None else text, record, layout, clock, hint)

    def record(self, name: str, line_no: int, text: str, record: Any, layout: Any, clock: StreamClock,
               hint: Any) -> None:
        header = parse_header(text, hint)
        level = level_of(text, header.msg_start)
        if level is None:
            return
        when = clock.time_of(header, tuple, record)
        if self.window and not self.window.holds(when.timestamp):
            return
        at = seconds(when.timestamp)
        incident = None
        if self.near is not None:
            incident = self.nearest(at)
            if incident is None:
                return
        if self.explained(text):
            self.result.explained += 1
            return
        if _TRACEBACK_PART.match(text, header.msg_start):
            return
        self.result.taken += 1
        message = ((header.func + " ") if header.func else "") + text[header.msg_start:]
        node = node_of(layout, record, record.pod if record is not None else layout.pod, self.options.node)
        self.result.miner.add(message, node=node, when=at, example=text, source=(name, line_no), level=level,
                              incident=incident)

    def nearest(self, at: float | None) -> int | None:
        """The incident whose window (its span and the margin either side) holds `at`, the one
        whose span is closest when several do."""
        best, gap = None, math.inf
        for inc, (lo, hi, margin) in (self.near or {}).items():
            if at is not None and lo <= at <= hi:
                d = max(lo + margin - at, at - (hi - margin), 0.0)
                if d < gap:
                    best, gap = inc, d
        return best

    def explained(self, text: str) -> bool:
        """A code (so a rule), a neighbour family or a link fact explains the line."""
        if self.codes.find(text):
            return True
        if classified_as(self.neighbours, text):
            return True
        # with its bytes, a plain ASCII line is answered by the core's fact table where it runs
        return bool(self.facts.find(text, text.encode() if text.isascii() else None))


def _level_lines(stream: Reader, stats: InputStats) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of the lines that hold a level word (or a glog level prefix); a line
    longer than MINE_MAX_LINE is cut there. Every line is counted."""
    rest = b""
    line_no = 0  # lines before `buf`
    reader = cast(BinaryIO, stream)
    while True:
        chunk = reader.read(MINE_CHUNK)
        stats.bytes += len(chunk)
        buf = rest + chunk if chunk else rest + b"\n" if rest else b""
        if not buf:
            break
        end = buf.rfind(b"\n") + 1  # whole lines only; the rest waits for the next block
        if end == 0 and len(buf) > MINE_MAX_LINE:  # a very long line: cut, not held
            buf, end = buf[:MINE_MAX_LINE] + b"\n", MINE_MAX_LINE + 1
        counted = 0
        for start in _level_starts(buf, end):
            stop = buf.find(b"\n", start, end)
            line_no += buf.count(b"\n", counted, start)
            counted = start
            yield line_no + 1, buf[start:min(stop, start + MINE_MAX_LINE)].rstrip(b"\r")
        line_no += buf.count(b"\n", counted, end)
        rest = buf[end:]
        if not chunk:
            break
    stats.lines += line_no


def _level_starts(buf: bytes, end: int) -> list[int]:
    """Sorted starts of the lines of buf[:end] that hold a level literal or begin as glog does."""
    starts: set[int] = set()
    for literal in _LEVEL_LITERALS:
        at = buf.find(literal, 0, end)
        while at >= 0:
            starts.add(buf.rfind(b"\n", 0, at) + 1)
            at = buf.find(b"\n", at, end)  # on to the next line: one hit per line is enough
            if at < 0:
                break
            at = buf.find(literal, at, end)
    for prefix in _GLOG_STARTS:
        at = -1 if not _GLOG_LEVEL_AT.match(buf, 0) else 0
        if at == 0:
            starts.add(0)
        at = buf.find(prefix, 0, end)
        while at >= 0:
            if _GLOG_LEVEL_AT.match(buf, at + 1):
                starts.add(at + 1)
            at = buf.find(prefix, at + 1, end)
    return sorted(starts)


# -- draft rules -----------------------------------------------------------------------------

_PIECE_SPLIT = re.compile(r"<(?:N|HEX|IP|TS|ID|PATH)>")
MAX_PIECES = 16
DRAFT_GAP = 400  # characters a draft pattern allows between two fixed pieces


def draft_id(template: Template) -> str:
    """A stable id of a template's text: `draft-` and 8 hex digits."""
    return "draft-" + hashlib.blake2b(template.text.encode("utf-8", "surrogateescape"), digest_size=4).hexdigest()


def pieces_of(template: Template) -> list[str]:
    """The fixed text of a template, in order: its tokens without the masks and wildcards."""
    out: list[str] = []
    for token in template.tokens:
        if token == WILD:
            continue
        out.extend(p for p in _PIECE_SPLIT.split(token) if p.strip())
    return out[:MAX_PIECES]


def draft_family(template: Template) -> tuple[dict[str, Any], list[str]] | None:
    """A draft neighbour family for a template, and the examples it classifies; None when the
    template keeps too little fixed text to match on (3 characters of one piece at least)."""
    pieces = pieces_of(template)
    if not pieces:
        return None
    literal = max(pieces, key=len)
    if len(literal) < 3 or not all(literal in ex for ex in template.examples):
        return None
    family_id = draft_id(template)
    # Each later piece is reached by a possessive tempered run that stops before its first
    # occurrence: linear in the line (no backtracking between pieces).
    pattern = "(?P<code>" + re.escape(pieces[0]) + ")" + "".join(
        f"(?:(?!{re.escape(p)})[^\\n]){{0,{DRAFT_GAP}}}+{re.escape(p)}" for p in pieces[1:])
    family = {
        "id": family_id,
        "name": f"DRAFT (name me): {template.text[:100]}",
        "level": 1,
        "literals": [literal],
        "pattern": pattern,
        "aliases": {pieces[0].lower(): family_id},
        "codes": {family_id: template.text[:200]},
        "action": "collect-logs",
        "remedy": f"Draft mined by ddtriage mine ({template.count} lines, {len(template.nodes)} nodes): "
                  f"write what to do.",
    }
    return family, list(template.examples)


def write_drafts(directory: Path, templates: list[Template], rules: RuleSet) -> list[str]:
    """Write `directory/neighbours.yaml`: the neighbour families in effect, then one draft family
    per template that can be drafted, its examples verbatim; return the draft ids. A neighbours
    file in a --rules folder replaces the built-in one, so the drafts come with every family."""
    from ..knowledge.families import NeighbourMatcher

    base_path = neighbours_path(rules) or BUILTIN_RULES_DIR / "neighbours.yaml"
    base = yaml.safe_load(base_path.read_text(encoding="utf-8")) or {}
    families = list(base.get("families") or [])
    examples = dict(base.get("examples") or {})
    known = {f.get("id") for f in families if isinstance(f, dict)}
    drafts: list[tuple[dict[str, Any], list[str]]] = []
    for template in templates:
        made = draft_family(template)
        if made is None or made[0]["id"] in known:
            continue
        family, lines = made
        matcher = NeighbourMatcher.load_families([family])
        lines = [ln for ln in lines if family["id"] in classified_as(matcher, ln)]
        if not lines:
            continue
        known.add(family["id"])
        drafts.append((family, lines))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DDTriageError(f"{directory}: cannot create the folder: {exc.strerror or exc}") from None
    text = (
        f"# Neighbour families in effect ({base_path.name}), then {len(drafts)} DRAFT families mined by\n"
        "# `ddtriage mine --draft-rules`. Each draft matches its examples (`ddtriage rules check DIR`\n"
        "# proves it); a human gives it a name, codes and a remedy, then moves it into\n"
        "# analyzer/data/neighbours.yaml. Use the folder as it is with `ddtriage scan --rules DIR`.\n"
        + yaml.safe_dump({"families": families + [f for f, _ in drafts]}, allow_unicode=True, sort_keys=False,
                         width=120)
        + yaml.safe_dump({"examples": {**examples, **{f["id"]: {"match": ex} for f, ex in drafts}}},
                         allow_unicode=True, sort_keys=False, width=120))
    try:
        (directory / "neighbours.yaml").write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DDTriageError(f"{directory / 'neighbours.yaml'}: cannot write: {exc.strerror or exc}") from None
    return [f["id"] for f, _ in drafts]
