"""Unpack: open an input and yield the plain-text log streams inside it.

Stage: inputs (unpacking). Each layer is sniffed and handled by its row of `formats`' table:
a compression is decompressed (streamed: nothing goes to disk or wholly into memory) and looked
at again; an archive is walked member by member, nested to `MAX_DEPTH` archives (compressions do not
count: `MAX_LAYERS` bounds them); text in UTF-16 is
re-encoded. What --include/--exclude leave out is counted, what cannot be read is listed.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.records import Skipped
from .codecs import Codec, Decompressed, WideToUtf8
from .formats import BY_NAME, SNIFF_BYTES, detect, lookalike_note, zip_after_prefix
from .names import printable
from .own import OWN_REPORT_HEAD, left_out_reason, own_document
from .readahead import ReadAhead
from .selection import Selection
from .streams import PIECE, READ_ERRORS, Budget, Leaf, LimitExceeded, Limits, Reader, SafeStream, reason, why

MAX_DEPTH = 8  # archives nested inside an input: one inside 8 others (level 9) is not walked
MAX_LAYERS = 3 * (MAX_DEPTH + 1)  # layers of any kind (a compression on each side of an archive, per level)
READ_AHEAD = True  # inflate a compressed file in a background thread (tests turn it off to compare)


class Unpacker:
    """Walks one top-level input down to its text streams."""

    def __init__(self, limits: Limits, selection: Selection, skipped: list[Skipped],
                 notes: list[Skipped] | None = None) -> None:
        self.limits = limits
        self.selection = selection
        self.skipped = skipped
        # Read with a caveat, or left out on purpose (ddtriage's own reports): not data lost. With
        # a list here, ddtriage's own reports are left out; without (reading lines back), they are read.
        self.notes = notes
        self.excluded = 0  # streams left out by --include/--exclude
        self._mtimes: list[float | None] = []
        self._archives = 0  # archives being walked around the current layer (its nesting level)

    def readable_leaves(self, name: str, raw: Reader, path: str | None = None,
                        mtime: float | None = None) -> Iterator[Leaf]:
        """`leaves`, until the input breaks: a read error while finding the next leaf (a cut
        archive, a bad header) ends the input, listed as skipped with its reason."""
        leaves = self.leaves(name, raw, path, mtime)
        while True:
            try:
                leaf = next(leaves)
            except StopIteration:
                return
            except READ_ERRORS as exc:
                self.skipped.append(Skipped(name, reason(exc)))
                return
            yield leaf

    def leaves(self, name: str, raw: Reader, path: str | None = None,
               mtime: float | None = None) -> Iterator[Leaf]:
        """Text streams inside `raw` (an opened top-level input). The consumer must read each
        leaf before asking for the next: archives are read as one forward stream."""
        self._mtimes = [mtime]  # the innermost archive member's mtime is the one that counts
        # A file read as it is loses nothing to a failed big read, so it is read in whole blocks;
        # decompressed layers below are read in small pieces.
        top = SafeStream(raw, piece=1 << 30)
        budget = Budget(self.limits, source=lambda: top.delivered)
        yield from self._expand(name, top, budget, 0, path)

    # -- what the archive walkers call back -------------------------------------------------------
    def skip(self, name: str, reason: str) -> None:
        """Record `name` as skipped, with the reason."""
        self.skipped.append(Skipped(printable(name), reason))

    def note(self, name: str, reason: str) -> None:
        """Record a caveat about `name`, which was read in full (or left out on purpose)."""
        (self.skipped if self.notes is None else self.notes).append(Skipped(printable(name), reason))

    def _own_report(self, stream: SafeStream) -> str | None:
        """The kind of ddtriage report `stream` holds, when ddtriage's own reports are left out."""
        try:
            return own_document(stream.peek(OWN_REPORT_HEAD)) if self.notes is not None else None
        except LimitExceeded:
            return None  # the read that follows reports it

    def left_out(self, name: str) -> bool:
        """Whether --exclude leaves this archive member out (it is then counted), or it is hidden."""
        if self.selection.hidden_member(name):
            return True
        if self.selection.excluded(name):
            self.excluded += 1
            return True
        return False

    def member(self, child: str, handle: Reader, budget: Budget, depth: int, piece: int = PIECE,
               mtime: float | None = None) -> Iterator[Leaf]:
        """Expand one archive member; a failure inside it is charged to the member."""
        stream = SafeStream(handle, budget, piece=piece)
        self._mtimes.append(mtime or self._mtimes[-1])
        try:
            yield from self._expand(child, stream, budget, depth + 1, None)
        except READ_ERRORS as exc:
            self.skip(child, why(exc))
        finally:
            self._mtimes.pop()

    def _decompressed(self, name: str, stream: SafeStream, kind: str, codec: Codec, budget: Budget,
                      depth: int) -> Iterator[Leaf]:
        """The layer inside a compressed stream."""
        try:
            inner = Decompressed(stream, codec)
        except LimitExceeded as exc:  # e.g. the codec's library is not installed
            self.skip(name, str(exc))
            return
        # The file's own compression is inflated ahead in a thread (a big .gz: decompression
        # and scanning overlap). Not a nested layer: one thread per input is enough.
        layer: Reader = ReadAhead(inner, inner.widen) if depth == 0 and READ_AHEAD else inner
        yield from self._expand(name, SafeStream(layer, budget, lambda: inner.consumed), budget, depth + 1, None)
        if inner.trailing:  # every line was read: a note, not a skipped input
            self.note(name, f"bytes after the end of the {kind} data ignored (trailing garbage)")

    # -- one layer ----------------------------------------------------------------------------------
    def _expand(self, name: str, stream: SafeStream, budget: Budget, depth: int, path: str | None) -> Iterator[Leaf]:
        if depth > MAX_LAYERS:  # compressions of compressions (a gzip quine never ends)
            self.skip(name, f"more than {MAX_LAYERS} layers of compression and archives: not read")
            return
        try:
            head = stream.peek(SNIFF_BYTES)
        except LimitExceeded as exc:
            self.skip(name, str(exc))
            return
        fmt = detect(head, name)
        if fmt.name == "text" and depth == 0 and zip_after_prefix(head, name, path):
            fmt = BY_NAME["zip"]
            self.note(name, "a zip archive after other bytes (a self-extracting zip?): read as a zip")
        if fmt.unsupported is not None:
            self.skip(name, fmt.unsupported)
            return
        if fmt.codec is None and fmt.walk is None and fmt.encoding is None:
            fake = lookalike_note(head, name)
            if fake:  # nothing is lost: the bytes are scanned as they are
                self.note(name, fake)
        if fmt.codec is not None:
            yield from self._decompressed(name, stream, fmt.name, fmt.codec, budget, depth)
            return
        if fmt.walk is not None:
            if self._archives > MAX_DEPTH:
                self.skip(name, f"{fmt.name} archive at nesting level {self._archives} (inside {self._archives} "
                                f"archives), deeper than {MAX_DEPTH} levels: not read; unpack it first")
                return
            self._archives += 1
            try:
                yield from fmt.walk(self, name, stream, budget, depth, path)
            finally:
                self._archives -= 1
            return
        if fmt.encoding is not None:
            def bad(units: int, name: str = name, encoding: str = fmt.encoding) -> None:
                self.note(name, f"{units} code unit{'s' if units != 1 else ''} of {encoding.upper()} that "
                                f"{'are' if units != 1 else 'is'} no character (a lone surrogate, a unit cut short "
                                "or past U+10FFFF) read as U+FFFD; the rest of the file was read")

            stream = SafeStream(WideToUtf8(stream, fmt.encoding, bad), budget)
        if self.selection.hidden_member(name):
            return
        if self.selection.wanted(name):
            kind = self._own_report(stream)
            if kind:  # a report or baseline ddtriage wrote: its codes are not log lines
                self.note(name, left_out_reason(kind))
                return
            yield Leaf(name, stream, self._mtimes[-1])
        else:
            self.excluded += 1
