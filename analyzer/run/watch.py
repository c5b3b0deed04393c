"""`ddtriage watch`: follow logs as they are written, and keep the analysis a scan would give.

Stage: run (a back end, like `parallel`). A `Follower` keeps one `Tail` per file, by (device,
inode): a plain log is read on from the offset it was read to, each new line-aligned byte range
scanned by the engine as a split file's range is (`parallel.scan_range`: the file's head tells
its envelope, the text before the range is what its first lines look back at), its line numbers
shifted by the lines before it. A range ends at the last newline, and before the parts of a line
the runtime cut (or a CSV record still open) whose last part is not written yet: they are read
with it, joined, as a scan of the finished file reads them. So each file's findings, related errors and link facts are
those a scan of the file would give, and `analysis()` ends the run as a scan does
(`finish.finish_run`). A file that is

- renamed (rotation): the same inode under a new name, read again from the start under it;
- truncated in place (copytruncate), or replaced: read again from the start, with a note;
- deleted: dropped (what was reported stays reported);
- compressed or an archive: read whole again when its size or mtime changes.

What was reported is kept per inode as a line mark (`Tail.reported`): a line at or below it is
never reported twice, whether the file is read again after a rename, the start of a small file
is read again (until it holds `HEAD_BYTES`, which decide its envelope, every growth re-reads it),
or watch restarts from `--state`. A new file whose first `SIGNATURE_BYTES` are those of a file
already read (the copy `copytruncate` makes) inherits that file's mark. A restart reads every
file again (so the analysis is whole) and reports only lines past the marks saved.

Incidents get a stable id (`stable_id`) from what does not change as they grow: their earliest
burst or related error (time, node, code, line text).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import select
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO, cast

from ..core.errors import InputError
from ..core.observations import RelatedEvent
from ..core.records import Finding, InputStats, RuleTexts, Skipped
from ..core.serial import finding_dict
from ..core.times import EVERY_TIME
from ..detect.engine import Engine
from ..diagnose.summary import Incident
from ..inputs import iter_sources
from ..inputs.formats import SNIFF_BYTES, lookalike_note
from ..inputs.names import printable
from ..inputs.sources import Source
from ..knowledge.envelopes import HEAD_BYTES
from ..scan.blocks import HISTORY_BYTES
from ..scan.reassembly import MAX_GROUP, OpenRecord, waiting_parts
from .analysis import Analysis
from .api import Options, analyze_snippet
from .finish import finish_run
from .parallel import SEED_BYTES, is_plain, scan_range, splits_files
from .store import FindingStore, RunWriter

SIGNATURE_BYTES = 4096  # the first bytes that tell a file from another one (and a copy of it)
STATE_VERSION = 1
FORMER_KEPT = 1000  # signatures of content truncated or deleted that are remembered (oldest go first)
RESYNC_MS = 5000  # with notifications, the tree is also walked this often (a missed event costs no line)
DEBOUNCE_MS = 200  # notifications are grouped at most this long: the latency a busy log adds
STDIN_WAIT = 0.25  # seconds between looks at the stop flag while standard input is silent
Key = tuple[int, int]  # (device, inode)
WARM_UP = ("[ERROR] GE(1,python3):2025-11-12-03:40:01.000.000 [llm_link_manager.cc:1]1 LinkClusters: ErrorNo: "
           "1343270921(local cluster link with remote cluster failed!) remote ip info = 10.0.0.1:26000, "
           "cluster_id = 1, req_id = x\n")


@dataclass
class Tail:
    """One followed file (one inode): how far it was read, and what it held so far."""

    key: Key
    source: Source
    plain: bool = True  # read on from `offset`; else (compressed, an archive) read whole again
    offset: int = 0  # bytes read: a line start (or the end, after the final read)
    lines: int = 0  # lines read
    reported: int = 0  # plain: lines whose findings and related errors were reported
    members: dict[str, int] = field(default_factory=dict)  # not plain: source -> lines reported
    signature: str = ""  # hash of the first `signed` bytes
    signed: int = 0
    size: int = -1
    mtime: float = -1.0
    findings: list[Finding] = field(default_factory=list)
    stats: InputStats = field(default_factory=InputStats)
    noted: bool = False  # its look-alike note was reported (a small file is read again as it grows)

    def restart(self) -> None:
        """Forget what was read (not what was reported): the file is read again from the start."""
        self.offset = self.lines = 0
        self.size = -1
        self.findings = []
        self.stats = InputStats()


@dataclass
class Update:
    """What one sync found that was not reported before, and what it noticed."""

    findings: list[Finding] = field(default_factory=list)
    related: list[RelatedEvent] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)
    changed: bool = False  # anything the analysis holds changed (lines read, a file renamed, added or gone)

    def __bool__(self) -> bool:
        return bool(self.findings or self.related)


class Follower:
    """The files under `paths` (or standard input, `-`) followed as they change."""

    def __init__(self, paths: Sequence[str], engine: Engine, options: Options | None = None,
                 state: str | None = None) -> None:
        self.paths = list(paths)
        self.engine, self.options = engine, options or Options()
        self.state_path = state
        self.tails: dict[Key, Tail] = {}
        self.order: list[Key] = []  # the tails in the order a scan reads them
        self.saved: dict[Key, dict[str, Any]] = {}  # marks from the state file, until their file is met
        self.incidents: dict[str, list[Any]] = {}  # stable id -> [signature, state] last reported
        # signature -> line mark of the content of files truncated or deleted (their copies may come)
        self.former: dict[str, int] = {}
        self.skipped: list[Skipped] = []
        self.excluded = 0
        self.stdin = self.paths == ["-"]
        self._window = _Window() if self.stdin else None
        # Growths are read as ranges only where a scan could cut a file into ranges: under a bare
        # --year (New Year crossings are counted from the file's start) or a version-gated rule
        # (a version is logged once, at a process's start) a growing file is read whole again.
        self.ranges = splits_files(self.options.year, engine.rules.uses_versions)
        if self.stdin:
            key = (-1, -1)
            self.tails[key], self.order = Tail(key, Source("-", None, bundle="-")), [key]
        # What the engine compiles on first use (~0.5 s: the link-fact screen) is paid now, not by
        # the first line that holds a code.
        analyze_snippet(engine, WARM_UP)
        self.resumed = bool(state and os.path.exists(state))  # from a state file an earlier watch left
        if state and self.resumed:
            self._load(state)

    # -- reading -----------------------------------------------------------------------------
    def sync(self, final: bool = False) -> Update:
        """Read what changed since the last sync. `final`: also the last line of a file that
        has no newline yet (a scan would read it)."""
        update = Update()
        skipped: list[Skipped] = []
        excluded: list[str] = []
        sel = self.options
        sources = list(iter_sources(self.paths, skipped, sel.selection, excluded, sel.not_these, sel.follow))
        order: list[Key] = []
        for src in sources:
            if src.path is None:
                continue
            try:
                st = os.stat(src.path)
            except OSError:
                continue  # gone between the walk and now: the next sync sees it
            key = (st.st_dev, st.st_ino)
            if key in order:
                continue
            tail = self.tails.get(key)
            if tail is None:
                tail = self.tails[key] = self._new_tail(key, src, update)
                update.changed = True
            elif tail.source.name != src.name:
                update.changed = True
                if _sign(_head(src.path)[:tail.signed]) == tail.signature:  # renamed (rotated): the same lines
                    tail.members = _renamed(tail.members, tail.source.name, src.name)  # its findings carry
                    tail.source = src  # the new name, and so do an archive's marks
                    tail.restart()
                else:  # a new file on the inode a deleted one freed (logrotate's `create`): its own marks
                    self._forget(tail)
                    tail = self.tails[key] = self._new_tail(key, src, update)
            tail.source = src
            order.append(key)
            self._read(tail, st, update, final)
        for key in set(self.tails) - set(order):
            self._forget(self.tails.pop(key))  # deleted: what was read of it stays reported, and leaves the analysis
            update.changed = True
        self.saved.clear()  # every file there is has been met: the marks of the others are of files gone
        update.changed |= (order, skipped, len(excluded)) != (self.order, self.skipped, self.excluded)
        self.order, self.skipped, self.excluded = order, skipped, len(excluded)
        return update

    def feed(self, data: bytes, final: bool = False) -> Update:
        """Standard input: `data` read from it (`final`: it ended)."""
        assert self._window is not None
        update = Update(changed=bool(data) or final)
        tail = self.tails[(-1, -1)]
        self._window.append(data)
        if tail.offset < HEAD_BYTES:  # its head decides its envelope: read it again, whole
            tail.restart()
        self._scan_plain(tail, cast(BinaryIO, self._window), self._window.size, update, final)
        self._window.forget(tail.offset - HISTORY_BYTES - SEED_BYTES)  # what the next range may look back at
        return update

    def _new_tail(self, key: Key, src: Source, update: Update) -> Tail:
        tail = Tail(key, src)
        saved = self.saved.pop(key, None)
        head = _head(src.path)
        if saved is not None:
            size = src.size or 0
            if size >= saved["offset"] and _sign(head[:saved["signed"]]) == saved["signature"]:
                tail.reported = saved["reported"]
                tail.members = _renamed(saved.get("members", {}), saved.get("name", ""), src.name)
                return tail
            update.notes.append(Skipped(src.name, "changed while watch was not running: read again from the start"))
            if saved["signed"] == SIGNATURE_BYTES:  # the copy copytruncate made meanwhile may come next
                self.former[saved["signature"]] = max(saved["reported"], self.former.get(saved["signature"], 0))
            return tail
        if len(head) >= SIGNATURE_BYTES:  # a copy of a file read already (copytruncate): no line twice
            mine = _sign(head)
            known = {t.signature: t.reported for t in self.tails.values() if t.signed == SIGNATURE_BYTES}
            known |= {s["signature"]: s["reported"] for s in self.saved.values() if s["signed"] == SIGNATURE_BYTES}
            tail.reported = max(known.get(mine, 0), self.former.get(mine, 0))
        return tail

    def _forget(self, tail: Tail) -> None:
        """Remember the mark of content about to go (a truncation, a deletion): a copy may come."""
        if tail.signed == SIGNATURE_BYTES:
            self.former[tail.signature] = max(tail.reported, self.former.get(tail.signature, 0))
            while len(self.former) > FORMER_KEPT:
                del self.former[next(iter(self.former))]

    def _read(self, tail: Tail, st: os.stat_result, update: Update, final: bool) -> None:
        if st.st_size == tail.size and st.st_mtime == tail.mtime and (
                not final or not tail.plain or tail.offset == st.st_size):
            return  # nothing new
        path = tail.source.path
        assert path is not None
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError:
            return
        with handle:
            now = os.fstat(handle.fileno())
            if (now.st_dev, now.st_ino) != tail.key:
                return  # replaced between the stat and the open: the next sync sees the new one
            size = now.st_size
            if tail.offset and (size < tail.offset or _sign(_read_at(handle, 0, tail.signed)) != tail.signature):
                update.notes.append(Skipped(tail.source.name, "truncated or rewritten: read again from the start"))
                self._forget(tail)
                tail.restart()
                tail.reported, tail.members = 0, {}
            if tail.offset < HEAD_BYTES:  # its head decides its envelope: read it again, whole
                tail.plain = self.ranges and is_plain(path)
                tail.restart()
            update.changed = True
            if tail.plain:
                self._scan_plain(tail, handle, size, update, final)
            else:
                self._scan_whole(tail, update)
            tail.signed = min(size, SIGNATURE_BYTES)
            tail.signature = _sign(_read_at(handle, 0, tail.signed))
            tail.size, tail.mtime = st.st_size, st.st_mtime

    def _scan_plain(self, tail: Tail, handle: BinaryIO, size: int, update: Update, final: bool) -> None:
        """The lines of `tail` past its offset (up to its last newline, unless `final`; and before
        the parts of a line its envelope says are still to come)."""
        end = size if final else _line_end(handle, tail.offset, size)
        if not final and end > tail.offset:
            end -= self._waiting(handle, tail.offset, end)
        if end <= tail.offset:
            if not tail.offset:
                tail.stats.files = 1  # empty so far: a file read all the same
            return
        stats = InputStats()
        if not tail.offset:  # a scan reads it through the unpacker, which notes a compressed look-alike
            note = lookalike_note(_read_at(handle, 0, SNIFF_BYTES), tail.source.name)
            if note is not None:
                stats.notes.append(Skipped(printable(tail.source.name), note))
                if not tail.noted:
                    update.notes.append(stats.notes[-1])
                    tail.noted = True
        writer = RunWriter()
        scan_range(self.engine, tail.source, handle, tail.offset, end, stats, writer.add)
        found: list[Finding] = []
        for run in writer.finish():
            run.shift = tail.lines
            found.extend(run)
        stats.observed.shift(tail.lines)
        stats.files = 0 if tail.offset else 1
        tail.findings.extend(found)
        tail.stats.add(stats)
        tail.offset, tail.lines = end, tail.lines + stats.lines
        update.findings += [f for f in found if f.line > tail.reported]
        update.related += [e for e in stats.observed.related if e.line > tail.reported]
        tail.reported = max(tail.reported, tail.lines)

    def _waiting(self, handle: BinaryIO, start: int, end: int) -> int:
        """The bytes before `end` that hold parts of a line not yet whole (`reassembly.waiting_parts`),
        in a file whose envelope (told from its head, as a scan tells it) joins cut lines."""
        envelopes = self.engine.rules.envelopes
        found = envelopes.match_head(_read_at(handle, 0, HEAD_BYTES)) if envelopes else None
        kind = found[0].partial if found else None
        if not kind:
            return 0
        if kind == "csv":  # an open quote is told from the record's start: the whole range, a MiB at a time
            record, carry, pos = OpenRecord(), b"", start
            handle.seek(start)
            while pos < end:
                piece = handle.read(min(1 << 20, end - pos))
                if not piece:
                    break
                pos += len(piece)
                lines = (carry + piece).split(b"\n")
                carry = lines.pop()
                for line in lines:
                    record.line(line)
            return record.waiting
        back = min(end - start, MAX_GROUP + (1 << 16))  # trailing parts only, whole lines of them
        data = _read_at(handle, end - back, back)
        if back < end - start:
            data = data[data.find(b"\n") + 1:]
        return waiting_parts(data, kind)

    def _scan_whole(self, tail: Tail, update: Update) -> None:
        """A compressed log or an archive, read whole again (members are named inside it)."""
        stats = InputStats()
        found: list[Finding] = []
        self.engine.scan_source(tail.source, stats, found.append)
        tail.findings, tail.stats = found, stats
        marks = dict(tail.members)
        for f in found:
            if f.line > marks.get(f.source, 0):
                update.findings.append(f)
        for e in stats.observed.related:
            if e.line > marks.get(e.source, 0):
                update.related.append(e)
        for source, line in [(f.source, f.line) for f in found] + [(e.source, e.line) for e in stats.observed.related]:
            tail.members[source] = max(tail.members.get(source, 0), line)

    # -- the analysis --------------------------------------------------------------------------
    def analysis(self) -> Analysis:
        """What a scan of the files as they are now would say."""
        stats = InputStats()
        stats.skipped = list(self.skipped)
        stats.excluded = self.excluded
        findings: list[Finding] = []
        for key in self.order:
            tail = self.tails[key]
            stats.add(copy.deepcopy(tail.stats))  # merging moves link facts: keep each tail's own
            findings += tail.findings
        stats.skipped = list(dict.fromkeys(stats.skipped))
        return finish_run(FindingStore.of(findings), stats, None, self.engine.rules, EVERY_TIME)

    def incident_events(self, analysis: Analysis) -> list[dict[str, Any]]:
        """`incident` events (change: new, updated, recovered) for what changed since the last call."""
        events: list[dict[str, Any]] = []
        taken: set[str] = set()
        for incident in analysis.summary.incidents:
            sid = stable_id(incident, analysis)
            while sid in taken:  # two incidents from one anchor: told apart by their rank
                sid += "+"
            taken.add(sid)
            body = incident.to_dict()
            state = getattr(incident, "state", None)  # issue #19 item 2: ongoing | recovered
            signature = _sign(json.dumps(body, sort_keys=True).encode())
            before = self.incidents.get(sid)
            if before is not None and before[0] == signature:
                continue
            if before is None:
                change = "new"
            elif state == "recovered" and before[1] != "recovered":
                change = "recovered"
            else:
                change = "updated"
            self.incidents[sid] = [signature, state]
            rank = body.pop("id")
            events.append({"kind": "incident", "change": change, "id": sid, "rank": rank, **body})
        return events

    # -- the state file --------------------------------------------------------------------------
    def save(self) -> None:
        """Write the state file (atomically), if there is one."""
        if not self.state_path or self.stdin:
            return
        files = [{"name": t.source.name, "dev": t.key[0], "ino": t.key[1], "offset": t.offset, "lines": t.lines,
                  "reported": t.reported, "members": t.members, "signature": t.signature, "signed": t.signed}
                 for t in (self.tails[k] for k in self.order)]
        files += [{"dev": k[0], "ino": k[1], **s} for k, s in self.saved.items()]  # not met yet: kept
        document = {"ddtriage_watch_state": STATE_VERSION, "paths": self.paths, "files": files,
                    "incidents": self.incidents}
        folder = os.path.dirname(os.path.abspath(self.state_path))
        fd, tmp = tempfile.mkstemp(prefix=".ddtriage-state-", dir=folder)  # hidden: never read as a log
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(document, out)
            os.replace(tmp, self.state_path)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise

    def _load(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            if document.get("ddtriage_watch_state") != STATE_VERSION:
                raise ValueError("not a ddtriage watch state file")
            for f in document["files"]:
                self.saved[(int(f["dev"]), int(f["ino"]))] = {
                    "name": str(f.get("name", "")), "offset": int(f["offset"]), "lines": int(f.get("lines", 0)),
                    "reported": int(f["reported"]), "members": {str(k): int(v) for k, v in f["members"].items()},
                    "signature": str(f["signature"]), "signed": int(f["signed"])}
            self.incidents = {str(k): list(v) for k, v in document["incidents"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{path}: unusable watch state: {exc}") from None


def stable_id(incident: Incident, analysis: Analysis) -> str:
    """An id that stays while the incident grows: from its earliest burst or related error (time,
    node, code, line text), never from a rank, a file name or a line number, which change."""
    bursts = [analysis.summary.bursts[i] for i in incident.bursts]
    related = [analysis.related[i] for i in incident.related]
    anchors = [(b.first_seen or "", b.node or "", b.lead.code, b.lead.text) for b in bursts]
    anchors += [(e.timestamp or "", e.node or "", e.code, e.text) for e in related]
    if not anchors:
        lead = incident.lead
        anchors = [(lead.timestamp or "", lead.node or "", lead.code, lead.text)]
    return "inc-" + _sign(repr(min(anchors)).encode())[:12]


def finding_event(f: Finding, texts: RuleTexts) -> dict[str, Any]:
    """The `finding` event of a finding: its JSON shape (as in `--format json`, its rule's remedy
    from `texts`), its log's `kind` (host, device, application) as `log_kind`."""
    return {"kind": "finding",
            **{("log_kind" if k == "kind" else k): v for k, v in finding_dict(f, texts).items()}}


def related_event(e: RelatedEvent) -> dict[str, Any]:
    """The `related` event of a related error: its JSON shape."""
    return {"kind": "related", **e.to_dict()}


# -- when to look ------------------------------------------------------------------------------
def watched_folders(paths: Sequence[str]) -> list[str]:
    """What to ask for notifications on: each folder given, and the folder of each file given."""
    folders = [p if os.path.isdir(p) else (os.path.dirname(p) or ".") for p in paths]
    return list(dict.fromkeys(folders))


def wakeups(paths: Sequence[str], stop: threading.Event, poll: bool = False, interval: float = 0.5,
            note: Callable[[str], None] = lambda _: None) -> Iterator[None]:
    """Yield whenever the files under `paths` may have changed, and every `RESYNC_MS` anyway,
    until `stop` is set: on inotify (watchfiles) events, else (`poll`, no watchfiles, or a
    watch that fails: a network file system, no inotify watches left) every `interval` seconds."""
    if not poll:
        try:
            # Its notifier, not its `watch()` generator: the notifier watches from the moment it is
            # made, so nothing written between the first walk and the first wait is missed.
            from watchfiles._rust_notify import RustNotify
        except ImportError:
            note("watchfiles is not installed: polling")
            poll = True
    if not poll:
        try:
            # recursive only when a folder is watched: a file's folder (/var/log) is not walked down
            recursive = any(os.path.isdir(p) for p in paths)
            notify = RustNotify(watched_folders(paths), False, False, 300, recursive, False)
        except Exception as exc:  # noqa: BLE001 - whatever the notifier's failure, polling still works
            note(f"file notifications failed ({type(exc).__name__}: {exc}): polling every {interval:g} s")
        else:
            with notify:
                yield  # the first walk
                while not stop.is_set():
                    try:
                        got = notify.watch(DEBOUNCE_MS, 50, RESYNC_MS, stop)
                    except Exception as exc:  # noqa: BLE001 - a folder watched went away, ...: poll on
                        note(f"file notifications stopped ({type(exc).__name__}: {exc}): polling every {interval:g} s")
                        break
                    if got == "stop":
                        return
                    if got != "signal":  # a signal handler ran (and set `stop`, or not): look again
                        yield
                else:
                    return
    while not stop.is_set():
        yield
        stop.wait(interval)


def read_stdin(stop: threading.Event, stream: BinaryIO | None = None) -> Iterator[bytes]:
    """Chunks of standard input as they arrive (b"" at its end), until `stop` is set."""
    stream = stream or sys.stdin.buffer
    try:
        fd = stream.fileno()
    except (OSError, io.UnsupportedOperation):  # not a file (a test's stream): read it as it comes
        yield from iter(partial(stream.read1 if hasattr(stream, "read1") else stream.read, 1 << 20), b"")
        yield b""
        return
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], STDIN_WAIT)
        if not ready:
            continue
        data = os.read(fd, 1 << 20)
        yield data
        if not data:
            return


# -- helpers -------------------------------------------------------------------------------------
class _Window(io.RawIOBase):
    """Standard input as a file `scan_range` can read: its head and the bytes since a little
    before the offset read to (the text the next range's first lines look back at)."""

    def __init__(self) -> None:
        self.head = b""
        self.base = 0  # offset of `recent`
        self.recent = bytearray()
        self.pos = 0

    @property
    def size(self) -> int:
        return self.base + len(self.recent)

    def append(self, data: bytes) -> None:
        if len(self.head) < HEAD_BYTES:
            self.head += data[:HEAD_BYTES - len(self.head)]
        self.recent += data

    @property
    def kept_from(self) -> int:
        """The offset from which the bytes are kept whole (`parallel._link_lines_before` reads no
        further back)."""
        return self.base

    def forget(self, before: int) -> None:
        """Drop what lies before offset `before` (the head is kept)."""
        if before > self.base:
            del self.recent[:before - self.base]
            self.base = before

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos
        return pos

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else self.pos + size
        if self.pos >= self.base:
            data = bytes(self.recent[self.pos - self.base:end - self.base])
        else:  # only the head is kept before `base`
            data = self.head[self.pos:min(end, len(self.head))]
        self.pos += len(data)
        return data


def _renamed(members: dict[str, int], old: str, new: str) -> dict[str, int]:
    """An archive's line marks per member source after the archive moved from `old` to `new`."""
    if not old or old == new:
        return dict(members)
    return {new + k[len(old):] if k.startswith(old) else k: n for k, n in members.items()}


def _sign(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read_at(handle: BinaryIO, offset: int, size: int) -> bytes:
    handle.seek(offset)
    return handle.read(size)


def _head(path: str | None) -> bytes:
    try:
        with open(path or "", "rb") as handle:
            return handle.read(SIGNATURE_BYTES)
    except OSError:
        return b""


def _line_end(handle: BinaryIO, start: int, size: int) -> int:
    """The offset just past the last newline in [start, size) (`start` when there is none)."""
    pos = size
    while pos > start:
        step = min(1 << 16, pos - start)
        handle.seek(pos - step)
        piece = handle.read(step)
        nl = piece.rfind(b"\n")
        if nl != -1:
            return pos - step + nl + 1
        pos -= step
    return start
