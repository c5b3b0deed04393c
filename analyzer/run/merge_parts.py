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

import hashlib
import json
import os
from collections.abc import Callable
from typing import IO, Any

from ..core.errors import InputError
from ..core.observations import Observed
from ..core.records import Finding, InputStats, RuleTexts, Skipped
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
        give_back_freed()  # what reading the parts freed (Arrow's metadata and batches), before the summary's peak
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
                return _read_json(path, text, sink, rules, observed, texts)
            text.seek(0)
            for n, line in enumerate(text, 1):
                if line.strip():
                    sink(finding_of(_loads(line, path, n), rules.catalog.is_generic, texts))
            return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        kind = type(exc).__name__
        raise InputError(f"{path}: not a ddtriage JSON, JSONL or Parquet report ({kind}: {exc})") from None
    except RecursionError:
        raise InputError(f"{path}: not a ddtriage report (JSON nested too deeply)") from None


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
        raise InputError(f"{path}: not a ddtriage JSON report (no findings list)")
    report = json.loads("".join(head).rstrip().rstrip(",") + "}")
    if report.get("tool") != "ddtriage":
        raise InputError(f"{path}: not a ddtriage JSON report")
    _known_version(path, report)
    if observed is not None:
        observed.add_report(report.get("related") or [], report.get("links") or [], report.get("proofs"))
    closed = opener.endswith("]")  # `"findings": []` on one line
    ended = False
    for n, line in enumerate(text, len(head) + 1):
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


def _read_parquet(path: str, sink: Callable[[Finding], None], observed: Observed | None = None,
                  texts: RuleTexts | None = None) -> InputStats:

    pq = load_pyarrow().parquet
    handle = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)  # read in pieces, not whole
    meta = parquet_head(handle)
    if meta is None:
        raise InputError(f"{path}: a Parquet file, but not a ddtriage report")
    _known_version(path, json.loads(meta))  # before any row (the head is read again after them: held
    # meanwhile, its related errors and link facts would add to a merge's peak)
    # A few MiB of rows at a time, decoded in this thread: a pool thread's malloc arena stayed
    # behind, ~20 MiB of a merge's peak.
    for batch in handle.iter_batches(batch_size=4096, use_threads=False):
        for row in batch.to_pylist():
            sink(finding_of(row, texts=texts))
    head = json.loads(meta)
    if observed is not None:
        observed.add_report(head.get("related") or [], head.get("links") or [], head.get("proofs"))
    return stats_from_dict(head["inputs"])


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

