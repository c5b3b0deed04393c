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
from functools import lru_cache

from .formats import strip_archive_suffix, strip_compression_suffix

# `mindie/log/...`: MindIE keeps its own log root beside ascend/ (domain.md §6), not a node.
_LAYOUT_WORDS = re.compile(
    r"(?i)^(?:ascend|log|logs|debug|run|security|plog|device_?log|device-\d+|slog|mindie|mindie[-_]?service)$")
_DEVICE_DIR = re.compile(r"(?i)^device-(\d+)$")
_PLOG_FILE = re.compile(r"(?i)^plog-(\d+)_\d+")
_DEVICE_FILE = re.compile(r"(?i)^device-(\d+)_\d+")
# System folders that sit above a local ~/ascend/log and say nothing about the node.
_POD_DIR = re.compile(r"^(?P<ns>[a-z0-9][-a-z0-9.]*)_(?P<pod>[a-z0-9][-a-z0-9.]*)_(?P<uid>[0-9a-f-]{8,})$")
_CONTAINER_LOG = re.compile(r"^(?P<pod>[a-z0-9][-a-z0-9.]*)_(?P<ns>[a-z0-9][-a-z0-9.]*)_(?P<c>[a-z0-9][-a-z0-9]*)"
                            r"-[0-9a-f]{64}\.log")
_NOT_A_NODE = {"..", "~", "log", "logs", "root", "home", "var", "tmp", "opt", "usr", "data", "mnt", "srv"}


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a log came from."""

    node: str | None
    kind: str  # host | device | application
    device: str | None
    pid: str | None
    anchored: bool = False  # the node is named by the Ascend layout or a bundle, not only the folder
    pod: str | None = None  # Kubernetes: /var/log/pods/<ns>_<pod>_<uid>/<container>/,
    container: str | None = None  # /var/log/containers/<pod>_<ns>_<container>-<id>.log


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
    device, in_device_dir, in_plog_dir, node, anchored = _from_folders(tuple(folders))
    kind = "device" if in_device_dir else "application"
    pid = None
    m = _DEVICE_FILE.match(base)
    if m:
        kind, pid = "device", m.group(1)
    m = _PLOG_FILE.match(base)
    if m:
        kind, pid = "host", m.group(1)
    if kind == "application" and in_plog_dir:
        kind = "host"
    pod, container = _kubernetes(folders, base)
    return Layout(node, kind, device, pid, anchored=anchored, pod=pod, container=container)


@lru_cache(maxsize=4096)  # the logs of one folder share it: a folder of 10,000 logs asks once per folder
def _from_folders(folders: tuple[str, ...]) -> tuple[str | None, bool, bool, str | None, bool]:
    """What the folders alone say: (device, inside a device-N folder, inside a plog folder,
    node, whether the node is anchored by the layout)."""
    device = None
    in_device_dir = False
    for folder in folders:
        m = _DEVICE_DIR.match(folder)
        if m:
            device, in_device_dir = m.group(1), True
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
    return device, in_device_dir, "plog" in lowered, node or user, anchor < len(folders) and node is not None


def _kubernetes(folders: list[str], base: str) -> tuple[str | None, str | None]:
    """(pod, container) named by a kubelet log path, else (None, None)."""
    for i, folder in enumerate(folders):
        m = _POD_DIR.match(folder)
        if m and i > 0 and folders[i - 1] == "pods":
            return m.group("pod"), folders[i + 1] if i + 1 < len(folders) else None
    m = _CONTAINER_LOG.match(base)
    if m and folders and folders[-1] == "containers":
        return m.group("pod"), m.group("c")
    return None, None
