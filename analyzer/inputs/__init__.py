"""Inputs: from command-line paths to the plain-text log streams inside them.

Stage: inputs. One module per step:

- `sources`: paths, folders and stdin -> `Source`; the default log root; year hints.
- `selection`: --include / --exclude globs.
- `streams`: budgeted, break-tolerant streams (`SafeStream`, `Limits`) and `READ_ERRORS`.
- `formats`: THE table of compressions, archives and text encodings: magic bytes, suffixes,
  handler. Sniffing, suffix stripping and the unpacker all read it.
- `codecs`: streaming decompression, UTF-16 and UTF-32 re-encoding.
- `readahead`: a compressed file inflated in a background thread, a few blocks ahead.
- `archives`: tar and zip walkers.
- `unpack`: `Unpacker`, which drives the table down to text `Leaf` streams.
- `layout`: node, kind, device and pid from a log's name.
- `names`: names fit for report lines.
"""

from .archives import walk_tar, walk_zip
from .codecs import Codec, Decompressed, WideToUtf8
from .formats import FORMATS, Format, decompressed, detect, sniff, strip_archive_suffix, strip_compression_suffix
from .layout import Layout, layout_of
from .names import printable
from .selection import Selection
from .sources import Source, YearHint, default_paths, iter_sources, year_hint
from .streams import READ_ERRORS, Budget, Leaf, LimitExceeded, Limits, SafeStream, StreamError
from .unpack import MAX_DEPTH, Unpacker

__all__ = [
    "FORMATS", "MAX_DEPTH", "READ_ERRORS", "Budget", "Codec", "Decompressed", "Format", "Layout", "Leaf",
    "LimitExceeded", "Limits", "SafeStream", "Selection", "Source", "StreamError", "Unpacker", "WideToUtf8",
    "YearHint", "decompressed", "default_paths", "detect", "iter_sources", "layout_of", "printable", "sniff",
    "strip_archive_suffix", "strip_compression_suffix", "walk_tar", "walk_zip", "year_hint",
]
