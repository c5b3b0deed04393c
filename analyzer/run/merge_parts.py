"""Map here, reduce there: combine the results of separate scans into one analysis.

Stage: run (a second way into the summary). Each node (or CI job) scans its own logs and
keeps the result (`--format json`, `jsonl` or `parquet`); `merge_parts` reads the parts back as
findings, files them in one `FindingStore` (spilled, so a fleet's findings are never all in
memory), and builds the summary from the same streaming aggregates as a scan (`diagnose.tally.Tally`):
codes, nodes, bundles, bursts, folded rows and failures across bundles come out as if everything
had been scanned at once, and the findings are those of a direct scan, in the same order.

Input stats (files, lines, bytes, skipped inputs) are added up from JSON and Parquet parts; a
JSONL part holds findings only, so its inputs are not counted (`merge` warns). Findings a
baseline marked `known` in a JSON part were hidden from that part's report and stay hidden.
Time windows and guessed years were applied by each part's scan and are not applied again.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import json
import marshal
import os
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..core.errors import InputError
from ..core.observations import Observed
from ..core.records import Finding, InputStats, RuleText, RuleTexts, Skipped
from ..core.serial import REPORT_VERSION, finding_of, load_pyarrow, parquet_head
from ..knowledge.rules import RuleSet
from .api import Analysis
from .finish import finish_run
from .memory import give_back_freed
from .store import FindingStore, RunWriter, spill_dir

FINDINGS_OPEN = '  "findings": ['  # the JSON writer puts each finding on its own line after this


REPORT_SUFFIXES = (".json", ".jsonl", ".parquet")  # the parts `read_report` takes from a folder


def read_report(path: str | os.PathLike[str], rules: RuleSet | None = None) -> Analysis:
    """The analysis of a JSON, JSONL or Parquet report of `ddtriage scan` (or `merge`), or of a
    folder of them (its `*.json`, `*.jsonl` and `*.parquet` files, merged as `merge` merges
    parts): the same `Analysis` a scan returns, so `.frames()`, `.summary` and the notebook view
    work on a fleet scanned elsewhere. What `merge` would warn about is a Python warning."""
    import warnings

    where = os.fspath(path)
    if os.path.isdir(where):
        parts = sorted(os.path.join(where, n) for n in os.listdir(where)
                       if n.endswith(REPORT_SUFFIXES) and os.path.isfile(os.path.join(where, n)))
        if not parts:
            raise InputError(f"{where}: a folder without reports (*{', *'.join(REPORT_SUFFIXES)})")
    else:
        parts = [where]
    return merge_parts(parts, rules, lambda message: warnings.warn(message, stacklevel=3))


def merge_parts(parts: list[str], rules: RuleSet | None = None,
                warn: Callable[[str], None] | None = None) -> Analysis:
    """One analysis of the findings and input stats of every part (JSON, JSONL or Parquet
    reports of `ddtriage scan`), in report order. A part that cannot be read is an `InputError`
    naming it. A part met again (the same file twice, also through a link), or whose every
    finding was merged already (a JSON and a Parquet report of one scan, or a part of a part) is
    left out with a warning, so nothing is counted twice; a part that repeats only some of the
    logs merged before is an `InputError`, since its input stats cannot be split."""
    ruleset = rules or RuleSet.load()
    texts = ruleset.texts.copy()  # and those of rules only a part's scan knew (its user rules)
    store = FindingStore(spill_dir())
    stats = InputStats()
    observed = Observed()  # related errors and link facts of the JSON parts, for the incidents
    seen = _Seen()
    try:
        with parquet_reader():  # its child process gone before the summary's peak
            for part in parts:
                same = seen.same_file(part)
                if same is not None:
                    if warn:
                        warn(f"{part}: given again (as {same}); read once")
                    continue
                writer, part_observed, digests = RunWriter(store.spill_dir), Observed(), _Digests()

                def sink(f: Finding, add: Callable[[Finding], None] = writer.add, digests: _Digests = digests) -> None:
                    digests.add(f)
                    add(f)
                part_stats = read_part(part, sink, ruleset, part_observed, texts)
                runs = writer.finish()
                earlier = seen.repeats(part, digests)
                if earlier is not None:
                    if warn:
                        warn(f"{part}: every finding in it was merged already from {earlier}; left out")
                    continue
                if part_stats is None:
                    if warn:
                        warn(f"{part}: a JSONL part holds no input stats; its files, lines and bytes are not counted, "
                             "and its incidents know no related errors or link facts")
                else:
                    stats.add(part_stats)
                observed.add(part_observed)
                store.add(runs)
        stats.observed = observed
        give_back_freed()  # what reading the parts freed (their decoded batches), before the summary's peak
        return finish_run(store, stats, None, ruleset, texts=texts)  # counted again: the parts' tallies are not kept
    except BaseException:
        store.close()
        raise


class _Digests:
    """Per log (node, bundle, source) of one part: a digest of its findings, in order."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str | None, str | None, str], Any] = {}

    def add(self, f: Finding) -> None:
        key = (f.node, f.bundle, f.source)
        digest = self.logs.get(key)
        if digest is None:
            digest = self.logs[key] = hashlib.blake2b(digest_size=16)
        digest.update(repr((f.line, f.code, f.api, f.rule, f.timestamp, f.text)).encode("utf-8", "surrogatepass"))

    def done(self) -> dict[tuple[str | None, str | None, str], bytes]:
        return {key: d.digest() for key, d in self.logs.items()}


class _Seen:
    """The logs merged so far, to catch a part given twice (a shell glob that picks a part again,
    a JSON and a Parquet report of one scan): the same findings counted twice."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str | None, str | None, str], tuple[bytes, str]] = {}
        self.parts: list[str] = []
        self.files: dict[tuple[int, int], str] = {}

    def same_file(self, part: str) -> str | None:
        """The earlier part that is this very file (also through a link), else None."""
        try:
            st = os.stat(part)
        except OSError:
            return None  # read_part says why
        key = (st.st_dev, st.st_ino)
        if key in self.files:
            return self.files[key]
        self.files[key] = part
        return None

    def repeats(self, part: str, digests: _Digests) -> str | None:
        """The earlier part this one repeats (None: it is new, and is now seen); an `InputError`
        when it repeats only some of an earlier part's logs."""
        mine = digests.done()
        again = {key: self.logs[key][1] for key, digest in mine.items()
                 if key in self.logs and self.logs[key][0] == digest}
        if mine and len(again) == len(mine):
            return min(set(again.values()), key=self.parts.index)
        if again:
            (node, _, source), earlier = next(iter(sorted(again.items(), key=lambda kv: kv[0][2])))
            raise InputError(f"{part}: its findings in {source}{f' (node {node})' if node else ''} were merged "
                             f"already from {earlier}: the same log scanned twice; merge each log's scan once")
        for key, digest in mine.items():
            self.logs[key] = (digest, part)
        self.parts.append(part)
        return None


def read_part(path: str, sink: Callable[[Finding], None], rules: RuleSet,
              observed: Observed | None = None, texts: RuleTexts | None = None) -> InputStats | None:
    """Feed the findings of one part to `sink` in its order; return its input stats (None for
    JSONL, which has none). `texts` learns the remedies of rules `rules` does not hold."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
        if not magic:
            raise InputError(f"{path}: empty: not a ddtriage report")
        if magic == b"PAR1":
            return _read_parquet(path, sink, observed, texts)
        with open(path, encoding="utf-8") as text:
            first = text.readline()
            if first.strip() == "{":
                try:
                    return _read_json(path, text, sink, rules, observed, texts)
                except _NotAsWritten:
                    return _read_any_json(path, sink, rules, observed, texts)
            if _one_report(first):
                return _read_any_json(path, sink, rules, observed, texts)
            text.seek(0)
            for n, line in enumerate(text, 1):
                if line.strip():
                    sink(_jsonl_finding(_loads(line, path, n), path, n, rules, texts))
            return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        kind = type(exc).__name__
        raise InputError(f"{path}: not a ddtriage JSON, JSONL or Parquet report ({kind}: {exc})") from None
    except RecursionError:
        raise InputError(f"{path}: not a ddtriage report (JSON nested too deeply)") from None


def _jsonl_finding(found: dict[str, Any], path: str, n: int, rules: RuleSet, texts: RuleTexts | None) -> Finding:
    try:
        return finding_of(found, rules.catalog.is_generic, texts)
    except KeyError as exc:
        if "tool" in found:
            raise InputError(f"{path}: not a ddtriage report (written by {found['tool']!r})") from None
        raise InputError(f"{path}:{n}: not a ddtriage finding (no {exc})") from None


def _loads(line: str, path: str, n: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{n}: not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}:{n}: expected a finding (a JSON object)")
    return value


def _read_json(path: str, text: IO[str], sink: Callable[[Finding], None], rules: RuleSet,
               observed: Observed | None = None, texts: RuleTexts | None = None) -> InputStats:
    """A JSON report, streamed: its head up to the findings, then one finding per line."""
    head = ["{"]
    opener = ""
    for line in text:
        if line.rstrip("\n") in (FINDINGS_OPEN, FINDINGS_OPEN + "]"):
            opener = line.rstrip("\n")
            break
        head.append(line)
    else:
        raise _NotAsWritten
    try:
        report = json.loads("".join(head).rstrip().rstrip(",") + "}")
    except ValueError:
        raise _NotAsWritten from None
    if report.get("tool") != "ddtriage":
        raise _NotAsWritten
    closed = opener.endswith("]")  # `"findings": []` on one line
    following = text.readline()
    if not closed and following.lstrip().startswith("{") and not _an_object(following.strip().rstrip(",")):
        raise _NotAsWritten  # findings over several lines: laid out by another writer
    _known_version(path, report)
    if observed is not None:
        observed.add_report(report.get("related") or [], report.get("links") or [], report.get("proofs"))
    ended = False
    for n, line in enumerate(itertools.chain([following], text), len(head) + 1):
        item = line.strip().rstrip(",")
        if item.startswith("{") and not closed:
            found = _loads(item, path, n)
            if found.get("baseline") != "known":  # hidden by that scan's baseline
                sink(finding_of(found, rules.catalog.is_generic, texts))
        elif item == "]":
            closed = True
        elif item == "}" and closed:
            ended = True
    if not ended:  # a report written only in part (a full disk, a copy cut off): its findings are not all here
        raise InputError(f"{path}: cut off before the end of its findings list: not a whole ddtriage report")
    return stats_from_dict(report["inputs"])


class _NotAsWritten(Exception):
    """A JSON report not laid out as ddtriage writes it (pretty-printed again, keys sorted, one
    line): noticed before any finding was fed, so the general reader can start over."""


def _an_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _one_report(first: str) -> bool:
    """Whether a part whose first line is not a lone `{` is a whole report rather than JSONL: the
    line is a report on its own (`jq -c`), or the start of an object that goes on past it."""
    if not first.lstrip().startswith("{"):
        return False
    try:
        value = json.loads(first)
    except ValueError:
        return True  # an object over several lines: JSONL holds one on each line
    return isinstance(value, dict) and value.get("tool") == "ddtriage"


class _JsonStream:
    """The top level of one JSON object read in pieces (`json.JSONDecoder.raw_decode` on a
    buffer that grows until a value is whole), so a report of any layout is read in bounded
    memory: at most its largest single value, never its whole findings list."""

    PIECE = 1 << 20

    def __init__(self, handle: IO[str], path: str) -> None:
        self.handle, self.path = handle, path
        self.buf, self.pos, self.eof = "", 0, False
        self.decoder = json.JSONDecoder()

    def _more(self, want: int) -> bool:
        chunk = self.handle.read(want)
        if not chunk:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more(self.PIECE):
                return ""

    def take(self, wanted: str) -> str:
        got = self.peek()
        if not got:
            raise self._cut()
        if got not in wanted:
            raise ValueError(f"expected one of {wanted!r}, found {got!r}")
        self.pos += 1
        return got

    def value(self) -> Any:
        self.peek()
        want = self.PIECE
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if not self._more(want):
                    raise self._cut() from None
                want *= 2  # doubling: a value that never ends costs linear time, not quadratic
                continue
            if end < len(self.buf) or self.eof or not self._more(want):  # a number may go on
                self.pos = end
                return value

    def _cut(self) -> InputError:
        return InputError(f"{self.path}: cut off, or not JSON, before the end of the report")

    def members(self, on_finding: Callable[[Any], None]) -> dict[str, Any]:
        """The report's top-level members but its findings, each finding handed to `on_finding`
        in order; `findings` itself is True when the list is there."""
        head: dict[str, Any] = {}
        self.take("{")
        if self.peek() == "}":
            self.take("}")
        else:
            while True:
                key = self.value()
                if not isinstance(key, str):
                    raise ValueError("a key that is not a string")
                self.take(":")
                if key == "findings" and self.peek() == "[":
                    self.take("[")
                    if self.peek() == "]":
                        self.take("]")
                    else:
                        while True:
                            on_finding(self.value())
                            if self.take(",]") == "]":
                                break
                    head[key] = True
                else:
                    head[key] = self.value()
                if self.take(",}") == "}":
                    break
        if self.peek():
            raise ValueError("more after the report's end")
        return head


def _read_any_json(path: str, sink: Callable[[Finding], None], rules: RuleSet,
                   observed: Observed | None = None, texts: RuleTexts | None = None) -> InputStats:
    """A JSON report of any layout, read twice: its head first (whatever the order of its keys,
    its findings are fed only once it is known to be a report this ddtriage reads), then its
    findings, one at a time."""
    with open(path, encoding="utf-8") as text:
        head = _JsonStream(text, path).members(lambda found: None)
    if head.get("tool") != "ddtriage":
        raise InputError(f"{path}: not a ddtriage JSON report")
    if head.get("findings") is not True:
        raise InputError(f"{path}: not a ddtriage JSON report (no findings list)")
    _known_version(path, head)
    if not isinstance(head.get("inputs"), dict):
        raise InputError(f"{path}: not a ddtriage JSON report (no inputs)")
    stats = stats_from_dict(head["inputs"])
    if observed is not None:
        observed.add_report(head.get("related") or [], head.get("links") or [], head.get("proofs"))

    def feed(found: Any) -> None:
        if not isinstance(found, dict):
            raise ValueError("a finding that is not a JSON object")
        if found.get("baseline") != "known":  # hidden by that scan's baseline
            sink(finding_of(found, rules.catalog.is_generic, texts))

    with open(path, encoding="utf-8") as text:
        _JsonStream(text, path).members(feed)
    return stats


def _read_parquet(path: str, sink: Callable[[Finding], None], observed: Observed | None = None,
                  texts: RuleTexts | None = None) -> InputStats:
    reader = _PARQUET.get()
    if reader is None:  # no merge around this read (`read_report`): a reader for it alone
        with parquet_reader():
            return _read_parquet(path, sink, observed, texts)
    meta = ""
    for kind, data in reader.read(path):
        if kind == "rows":
            found, learned = data
            for rule, remedy, references in learned:
                if texts is not None:
                    texts.learn(rule, RuleText(remedy, tuple(references)))
            for row in found:
                sink(Finding._make(row))
        else:
            meta = data
    head = json.loads(meta)
    if observed is not None:
        observed.add_report(head.get("related") or [], head.get("links") or [], head.get("proofs"))
    return stats_from_dict(head["inputs"])


# --- the Parquet reader's own process ----------------------------------------------------------
#
# Arrow's libraries and the buffers of its reader are ~90 MiB of a process that imports them, more
# than the rows it decodes. A merge reads its Parquet parts in a child process, forked once per
# merge and handed the parts one at a time, so the merge's own process, which then builds the
# summary and the incidents of every finding, never holds Arrow: its peak was Arrow's ~90 MiB
# plus its summary's objects (fleet bench: 219 MiB). The child sends each batch of rows back as
# the findings `finding_of` reads from them, in one `marshal` payload (interned strings stay
# interned), with the texts of rules it learnt; it decodes the next batch while the merge stores
# this one. What cannot be read is the same one-line InputError as before, raised here.

_PARQUET: contextvars.ContextVar[_ParquetReader | None] = contextvars.ContextVar("parquet_reader", default=None)
_STOP = b"\0"  # the parent's last word to the child (a part's path is never empty)


@contextlib.contextmanager
def parquet_reader() -> Iterator[None]:
    """Parquet parts read in this block are decoded by one child process, stopped at its end."""
    reader = _ParquetReader()
    token = _PARQUET.set(reader)
    try:
        yield
    finally:
        _PARQUET.reset(token)
        reader.close()


class _ParquetReader:
    """The child process (started on the first part) and the pipe to it."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._child: Any = None

    def read(self, path: str) -> Iterator[tuple[str, Any]]:
        """("rows", (finding tuples, learned rule texts)) per batch, then ("head", its JSON
        head); an InputError for a part that cannot be read."""
        if self._child is None:
            self._start()
        asked = False
        while True:
            try:
                if not asked:
                    self._conn.send_bytes(os.fsencode(path))
                    asked = True
                message = self._conn.recv_bytes()
            except (EOFError, OSError):  # the child died (killed, or a crash in Arrow's reader)
                self._child.join(2)
                code = self._child.exitcode
                self.close()
                raise InputError(f"{path}: the Parquet reader stopped (exit code {code})") from None
            kind, data = marshal.loads(message)
            if kind == "error":
                raise InputError(data)
            yield kind, data
            if kind == "head":
                return

    def _start(self) -> None:
        import multiprocessing
        import threading

        # fork: this process's modules, no start-up; where other threads run (a notebook's
        # kernel), a fresh interpreter instead, as forking them is unsafe
        context: Any = multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")
        self._conn, theirs = context.Pipe()
        self._child = context.Process(target=_parquet_child, args=(theirs,), name="ddtriage-parquet", daemon=True)
        self._child.start()
        theirs.close()

    def close(self) -> None:
        conn, child, self._conn, self._child = self._conn, self._child, None, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send_bytes(_STOP)
            conn.close()
        if child is not None:
            child.join(2)  # at once after a stop; a child still sending (a ^C mid-part) is killed
            if child.is_alive():
                child.kill()
                child.join()


def _parquet_child(conn: Any) -> None:
    """The child's loop: each path it is sent, read and sent back batch by batch (`_ParquetReader.read`),
    until it is told to stop or the merge is gone (its pipe closed, also while a part is sent)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the merge's to handle: it stops this child
    learned: set[str] = set()
    with contextlib.suppress(EOFError, OSError):
        while (message := conn.recv_bytes()) != _STOP:
            for payload in _parquet_payloads(os.fsdecode(message), learned):
                conn.send_bytes(payload)


def _parquet_payloads(path: str, learned: set[str]) -> Iterator[bytes]:
    """One part's payloads (`_parquet_batches`), or after those sent, one error naming it."""
    try:
        yield from _parquet_batches(path, learned)
    except InputError as exc:
        yield marshal.dumps(("error", str(exc)))
    except OSError as exc:
        yield marshal.dumps(("error", f"{path}: cannot read: {exc.strerror or exc}"))
    except (KeyError, TypeError, ValueError) as exc:  # Arrow's errors on a damaged file are ValueErrors
        yield marshal.dumps(("error", f"{path}: not a ddtriage JSON, JSONL or Parquet report "
                                      f"({type(exc).__name__}: {exc})"))
    except Exception as exc:  # noqa: BLE001 - anything else still ends in one line naming the part
        yield marshal.dumps(("error", f"{path}: cannot read this Parquet file ({type(exc).__name__}: {exc})"))


def _parquet_batches(path: str, learned: set[str]) -> Iterator[bytes]:
    """One part's payloads: a batch of rows at a time, then its head."""
    pq = load_pyarrow().parquet
    handle = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)  # read in pieces, not whole
    meta = parquet_head(handle)
    if meta is None:
        raise InputError(f"{path}: a Parquet file, but not a ddtriage report")
    _known_version(path, json.loads(meta))  # before any row
    # A few MiB of rows at a time, decoded in this thread: a pool thread's malloc arena stayed
    # behind, ~20 MiB of a peak.
    for batch in handle.iter_batches(batch_size=4096, use_threads=False):
        found, texts = [], RuleTexts()
        for row in batch.to_pylist():
            found.append(tuple(finding_of(row, texts=texts)))
        new = [(rule, text.remedy, list(text.references)) for rule, text in texts.items() if rule not in learned]
        learned.update(rule for rule, _, _ in new)
        yield marshal.dumps(("rows", (found, new)))
    yield marshal.dumps(("head", meta))


def _known_version(path: str, head: dict[str, Any]) -> None:
    """A report of a later shape than this ddtriage writes is refused: it would be misread."""
    version = head.get("version", REPORT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version > REPORT_VERSION:
        raise InputError(f"{path}: a report of version {version!r}; this ddtriage reads version {REPORT_VERSION} "
                         "and before: merge it with the ddtriage that wrote it")


def stats_from_dict(d: dict[str, Any]) -> InputStats:
    """Input stats from their JSON shape (`InputStats.to_dict`)."""
    return InputStats(files=d["files"], lines=d["lines"], bytes=d["bytes"], excluded=d["excluded"],
                      outside_window=d["outside_window"],
                      skipped=[Skipped(s["source"], s["reason"]) for s in d["skipped"]],
                      notes=[Skipped(s["source"], s["note"]) for s in d.get("notes", [])])

