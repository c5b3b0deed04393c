"""Layout: where a log came from, read off its name (Ascend layout, domain.md §7).

    bundle.tar.gz!node-2/device_log.tar.gz!device-3/device-41_20251112034001456.log
      -> node "node-2", kind "device", device "3", pid "41"

Stage: inputs (naming). Node is the folder or bundle above the Ascend layout (`ascend/`, `log/`,
`debug|run|security/`, `plog/`, `device-N/`, the collector's `plog.tar.gz`/`device_log.tar.gz`);
without a layout, the folder the log sits in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .formats import strip_archive_suffix, strip_compression_suffix

_LAYOUT_WORDS = re.compile(r"(?i)^(?:ascend|log|logs|debug|run|security|plog|device_?log|device-\d+|slog)$")
_DEVICE_DIR = re.compile(r"(?i)^device-(\d+)$")
_PLOG_FILE = re.compile(r"(?i)^plog-(\d+)_\d+")
_DEVICE_FILE = re.compile(r"(?i)^device-(\d+)_\d+")
# System folders that sit above a local ~/ascend/log and say nothing about the node.
_NOT_A_NODE = {"..", "~", "log", "logs", "root", "home", "var", "tmp", "opt", "usr", "data", "mnt", "srv"}


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a log came from."""

    node: str | None
    kind: str  # host | device | application
    device: str | None
    pid: str | None


def _parts(name: str) -> list[str]:
    """Path components, an archive counting as a folder named without its suffixes."""
    parts: list[str] = []
    pieces = name.replace("\\", "/").split("!")
    for i, piece in enumerate(pieces):
        parts.extend(p for p in piece.split("/") if p not in ("", "."))
        if parts and i < len(pieces) - 1:
            parts[-1] = strip_archive_suffix(strip_compression_suffix(parts[-1]))
    return parts


def is_layout_folder(name: str) -> bool:
    """Whether a folder name is part of the Ascend log layout (`ascend`, `log`, `plog`, `device-0`, ...)."""
    return bool(_LAYOUT_WORDS.match(name))


def layout_of(name: str) -> Layout:
    """Node, kind, device and pid of a log, from its name (`ARCHIVE!MEMBER` paths included)."""
    parts = _parts(name)
    folders, base = parts[:-1], (parts[-1] if parts else "")
    device = pid = None
    kind = "application"
    for folder in folders:
        m = _DEVICE_DIR.match(folder)
        if m:
            device, kind = m.group(1), "device"
    m = _DEVICE_FILE.match(base)
    if m:
        kind, pid = "device", m.group(1)
    m = _PLOG_FILE.match(base)
    if m:
        kind, pid = "host", m.group(1)
    if kind == "application" and any(f.lower() == "plog" for f in folders):
        kind = "host"
    lowered = [f.lower() for f in folders]
    # The Ascend root (`ascend/`) is the surest anchor; else the first layout folder.
    anchor = len(lowered) - 1 - lowered[::-1].index("ascend") if "ascend" in lowered else \
        next((i for i, f in enumerate(folders) if _LAYOUT_WORDS.match(f)), len(folders))
    # The nearest folder above the anchor that names something; a bundle tarred from `/` holds
    # `root/ascend/log/...`, and then the bundle's own name is the node.
    node = user = None
    for i in range(anchor - 1, -1, -1):
        if folders[i].lower() in _NOT_A_NODE or _LAYOUT_WORDS.match(folders[i]):
            continue
        if i > 0 and folders[i - 1].lower() == "home":
            user = user or folders[i]  # `home/<user>`: a user name; a folder or bundle above says more
            continue
        node = folders[i]
        break
    return Layout(node or user, kind, device, pid)
