"""Versions of CANN and its parts as CANN numbers them, ordered, and the version conditions of rules.

Stage: knowledge (versions). CANN's scheme puts release candidates before their release:
8.2.RC1 < 8.2.RC2 < 8.2.0 < 8.2.1 < 8.3.RC1 < 8.3.0. A build suffix after the third part counts
after it when it is a number (`25.0.rc1.2` > `25.0.rc1`) and before it when it is a pre-release tag
(`8.3.RC1.alpha001` < `8.3.RC1`). A `T` (test) build comes before the RCs of its release.

A rule's `match.versions` maps a version kind (`cann`, `driver`, `llm_datadist`, `hixl`, ...) to
one or more comparisons joined by commas: `{cann: ">=8.3.RC1"}`, `{cann: ">=8.2.RC1, <8.3.0"}`.
It holds when the process's logs named a version of that kind that satisfies every comparison;
a version never named makes it false (the ungated rule applies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Versions = tuple[tuple[str, str], ...]  # ((kind, version), ...) known for a finding's process

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(?:(rc|t)(\d+)|(\d+)))?(?:[.\-_]?(.+))?$", re.IGNORECASE)
_OPS = {">=": lambda c: c >= 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, "<": lambda c: c < 0,
        "==": lambda c: c == 0, "!=": lambda c: c != 0}
_CONDITION = re.compile(r"^\s*(>=|<=|==|!=|>|<)?\s*(\S+)\s*$")

VersionKey = tuple[int, ...]


def parse_version(text: str) -> VersionKey | None:
    """An order key for a CANN-style version (`8.3.RC1`, `8.2.0`, `25.0.rc1.2`, `9.1.0`), None for
    text that is no version."""
    m = _VERSION.match(text.strip())
    if not m:
        return None
    major, minor, stage, number, patch, extra = m.groups()
    if stage is not None:  # RCn (1) before the release; Tn (0) before the RCs
        key: tuple[int, ...] = (int(major), int(minor), 0 if stage.lower() == "t" else 1, int(number))
    elif patch is not None:
        key = (int(major), int(minor), 2, int(patch))
    else:
        key = (int(major), int(minor), 2, 0)
    if extra is None:
        return (*key, 1, 0)
    if extra.isdigit():
        return (*key, 2, int(extra))
    digits = re.search(r"\d+", extra)
    return (*key, 0, int(digits.group()) if digits else 0)  # alpha/beta builds before the version


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as CANN orders two versions (ValueError when either is no version)."""
    ka, kb = parse_version(a), parse_version(b)
    if ka is None or kb is None:
        raise ValueError(f"not a version: {a if ka is None else b!r}")
    return (ka > kb) - (ka < kb)


@dataclass(frozen=True, slots=True)
class VersionCondition:
    """`match.versions` of a rule: per kind, comparisons that all must hold."""

    terms: tuple[tuple[str, str, str], ...]  # (kind, operator, version)

    @classmethod
    def parse(cls, raw: object) -> VersionCondition:
        """From `{cann: ">=8.3.RC1"}`; ValueError with the reason when malformed."""
        if not isinstance(raw, dict) or not raw:
            raise ValueError("must map a version kind (cann, driver, llm_datadist, hixl) to a condition such "
                             "as \">=8.3.RC1\"")
        from ..core.observations import VERSION_KINDS

        terms = []
        for kind, text in raw.items():
            if kind not in VERSION_KINDS:
                raise ValueError(f"unknown version kind {kind!r} (one of {', '.join(VERSION_KINDS)})")
            for part in str(text).split(","):
                m = _CONDITION.match(part)
                if not m or parse_version(m.group(2)) is None:
                    raise ValueError(f"{kind}: {part.strip()!r} is not a comparison such as >=8.3.RC1")
                terms.append((str(kind), m.group(1) or "==", m.group(2)))
        return cls(tuple(terms))

    def holds(self, versions: dict[str, str]) -> bool:
        """Whether the versions known (kind -> version) satisfy every term."""
        for kind, op, wanted in self.terms:
            have = versions.get(kind)
            if have is None or parse_version(have) is None or not _OPS[op](compare(have, wanted)):
                return False
        return True

    def describe(self) -> str:
        """`cann >=8.3.RC1` (as explain shows it)."""
        return ", ".join(f"{kind} {op}{version}" for kind, op, version in self.terms)
