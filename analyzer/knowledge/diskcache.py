"""What loading the rule tables costs once, kept on disk for the next process (issue #17, start-up).

Stage: knowledge. Two kinds of entry, each a file named by a hash of what it answers for:

- `parsed`: the parsed YAML of one file content (`catalog.read_yaml`), as `marshal` bytes, written
  only once that content passed the checks of `read_yaml` (no alias, tag or deep nesting) and
  parsed; a later process that meets the same bytes skips PyYAML altogether, and the checks.
- `proven`: that every pattern text of one table compiles (`linkfacts.compile_patterns`): a later
  load of the same texts compiles each pattern on its first use instead of all of them at once.

The hash covers the content, the Python version, this module's format, ddtriage's own loader
(the source of `catalog.py`, so a new version or an edit of it starts afresh) and the library that
answers (PyYAML's or regex's installed files). The folder is `$DDTRIAGE_CACHE_DIR`, else
`$XDG_CACHE_HOME/ddtriage`, else `~/.cache/ddtriage`; `DDTRIAGE_NO_CACHE=1` turns the cache off.
It is never needed and never fatal: an entry is written to a temporary name and renamed (readers
see a whole entry or none), and a folder that cannot be made or written, or an entry that cannot
be read, is passed over silently: the file is then parsed (or the patterns compiled) as without it.
"""

from __future__ import annotations

import marshal
import os
import sys
from importlib.util import find_spec
from pathlib import Path

CACHE_FORMAT = 1  # bump when what an entry holds, or how it is keyed, changes
_SALTS: dict[str, bytes] = {}


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off (DDTRIAGE_NO_CACHE) or has no home."""
    if os.environ.get("DDTRIAGE_NO_CACHE", "").strip() not in ("", "0"):
        return None
    chosen = os.environ.get("DDTRIAGE_CACHE_DIR")
    if chosen:
        return Path(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "ddtriage"
    home = os.path.expanduser("~")
    return Path(home) / ".cache" / "ddtriage" if os.path.isabs(home) else None


def _source(module: str) -> bytes:
    """What identifies an installed module's code: its file's path, size and modification time
    (a new version is new files), or b"" when it cannot be found."""
    try:
        spec = find_spec(module)
        origin = spec.origin if spec is not None else None
        if origin is None:
            return b""
        st = os.stat(origin)
    except (ImportError, ValueError, OSError):
        return b""
    return f"{origin}|{st.st_size}|{st.st_mtime_ns}".encode()


def _salt(kind: str) -> bytes:
    salt = _SALTS.get(kind)
    if salt is None:
        try:
            loader = (Path(__file__).parent / "catalog.py").read_bytes()
        except OSError:
            loader = b""
        library = _source("yaml" if kind == "parsed" else kind.removeprefix("proven-"))
        salt = b"\0".join([kind.encode(), str(CACHE_FORMAT).encode(), sys.version.encode(),
                           str(marshal.version).encode(), loader, library])
        _SALTS[kind] = salt
    return salt


def _entry(kind: str, content: bytes) -> Path | None:
    where = cache_dir()
    if where is None:
        return None
    try:
        from _blake2 import blake2b  # hashlib's own, without hashlib's OpenSSL (~4 ms to import)
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b

    digest = blake2b(_salt(kind), digest_size=20)
    digest.update(b"\0")
    digest.update(content)
    return where / f"{kind}-{digest.hexdigest()}"


def get(kind: str, content: bytes) -> bytes | None:
    """The entry of `kind` for `content`, or None (no entry, the cache off or unreadable)."""
    path = _entry(kind, content)
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def put(kind: str, content: bytes, value: bytes) -> None:
    """Keep `value` as the entry of `kind` for `content`; silently nothing when that fails."""
    path = _entry(kind, content)
    if path is None:
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with open(fd, "wb") as handle:
                handle.write(value)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass
