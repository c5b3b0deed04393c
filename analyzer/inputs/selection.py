"""Selection: which inputs and archive members --include / --exclude / --hidden let through.

Stage: inputs (selection). Used on disk (`sources`) and inside archives (`unpack`) alike.

Globs have gitignore semantics (compiled by `pathspec`), as in ripgrep: `*` and `?` stay within one
name, `**` crosses folders, a glob without `/` matches a name at any depth, one with `/` matches a
path (wherever that path sits: `node-1/*.log`), and a match on a folder or archive covers what is
inside it. In a list of globs the last one that matches decides, and a leading `!` negates:
`--exclude 'node-*' --exclude '!node-1'` leaves node-1 in. Names are matched with `!` (archive
member) read as `/`, with and without compression (`.gz`) and rotation (`.1`) suffixes.

Hidden files and folders (a name starting with `.`) are skipped unless `--hidden` is given or they
are named on the command line: the folder walk asks `skip_hidden(name)` for each entry, and inside
archives any member whose path has a hidden part is skipped.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import cached_property

from .formats import strip_compression_suffix

_ROTATION = re.compile(r"\.\d+$")


def compile_glob(glob: str) -> tuple[re.Pattern[str], bool] | None:
    """A gitignore glob as (regex over a `/`-joined path, include?), or None for a no-op (a comment
    or blank). The regex also matches everything below a matching folder. (pathspec, ~20 ms to
    import, is imported by the first glob: a run without --include/--exclude never pays it.)"""
    from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern

    source, include = GitIgnoreBasicPattern.pattern_to_regex(glob)
    if include is None or source is None:
        return None
    # gitignore prunes a matched folder; member names here are whole paths, so extend the match
    # to descendants: end at a `/` or the end, whatever the translation ended with.
    for end in ("(?:/|$)", "/?$", "$"):
        if source.endswith(end):
            source = source[: -len(end)] + "(?:/|$)"
            break
    with warnings.catch_warnings():  # `[[:alpha:]]` is a set holding `[`: re warns that may change
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(source), bool(include)
        except re.error as exc:  # a range backwards (`[z-a]`): a ValueError the CLI names with its glob
            raise ValueError(exc.msg) from None  # (its position is in the translation, not the glob)


def _parts(name: str) -> list[str]:
    return [p for p in name.replace("!", "/").split("/") if p and p not in (".", "..")]


def candidates(name: str) -> list[str]:
    """Every path a glob is tried against: each trailing part of the name, as is and with the
    compression and rotation suffixes of each name stripped."""
    parts = _parts(name)
    plain = [_ROTATION.sub("", strip_compression_suffix(p)) for p in parts]
    out = ["/".join(parts[i:]) for i in range(len(parts))]
    if plain != parts:
        out += ["/".join(plain[i:]) for i in range(len(plain))]
    return out


@dataclass(frozen=True)
class Selection:
    """--include / --exclude globs, and whether hidden files are read (--hidden)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    hidden: bool = False

    @cached_property
    def _include(self) -> list[tuple[re.Pattern[str], bool]]:
        return [c for c in map(compile_glob, self.include) if c]

    @cached_property
    def _exclude(self) -> list[tuple[re.Pattern[str], bool]]:
        return [c for c in map(compile_glob, self.exclude) if c]

    @staticmethod
    def _decide(globs: list[tuple[re.Pattern[str], bool]], name: str) -> bool | None:
        """The polarity of the last glob that matches, None when none does."""
        names = candidates(name)
        for regex, include in reversed(globs):
            if any(regex.match(n) for n in names):
                return include
        return None

    def excluded(self, name: str) -> bool:
        """Whether an --exclude glob leaves `name` (and what is inside it) out."""
        return bool(self.exclude) and self._decide(self._exclude, name) is True

    def wanted(self, name: str) -> bool:
        """Not excluded, and matched by an --include glob if there are any."""
        if self.excluded(name):
            return False
        return not self.include or self._decide(self._include, name) is True

    def skip_hidden(self, entry: str) -> bool:
        """Whether the folder walk skips this entry (a file or folder name) as hidden."""
        return not self.hidden and entry.startswith(".") and entry not in (".", "..")

    def hidden_member(self, name: str) -> bool:
        """Whether an archive member (`ARCHIVE!MEMBER`) lies in a hidden file or folder. Only the
        part inside the archive counts: the archive itself was named or found by the walk."""
        if self.hidden or "!" not in name:
            return False
        return any(self.skip_hidden(p) for p in _parts(name.split("!", 1)[1]))
