"""Selection: which inputs and archive members --include / --exclude let through.

Stage: inputs (selection). Used on disk (`sources`) and inside archives (`unpack`) alike.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from .formats import strip_compression_suffix

_ROTATION = re.compile(r"\.\d+$")


@dataclass(frozen=True)
class Selection:
    """--include / --exclude globs. A glob is tried against the whole name (with `!` read as
    `/`), and against every folder, archive and file name along it, with and without the
    compression and rotation suffixes. On disk and inside archives alike, `--exclude node-2`
    prunes that folder and `--include '*.zip'` selects what is inside the zips."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @staticmethod
    def _names(name: str) -> set[str]:
        names = {name, name.replace("!", "/")}
        parts = [p for p in name.replace("!", "/").split("/") if p and p != "."]
        for i, part in enumerate(parts):
            plain = strip_compression_suffix(part)
            names.update((part, plain, _ROTATION.sub("", plain)))  # plog.log.3.gz -> plog.log
            names.add("/".join(parts[i:]))  # `node-1/*` matches wherever node-1 sits
        return names

    def _any(self, patterns: tuple[str, ...], name: str) -> bool:
        names = self._names(name)
        return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)

    def excluded(self, name: str) -> bool:
        """Whether an --exclude glob matches."""
        return bool(self.exclude) and self._any(self.exclude, name)

    def wanted(self, name: str) -> bool:
        """Not excluded, and matched by an --include glob if there are any."""
        if self.excluded(name):
            return False
        return not self.include or self._any(self.include, name)
