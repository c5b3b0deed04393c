"""Stage: diagnose (known errors). What a gate should not fail on again: a baseline and suppressions.

- A **baseline** (`--write-baseline FILE`) records today's findings by fingerprint (code + API +
  rule + masked message template, `analyzer.detect.fingerprint`), which survives shifted lines, new
  timestamps, pids, request ids and addresses. `--baseline FILE` keeps only findings whose
  fingerprint it does not hold (new), counts the known ones and lists what disappeared.
- A **suppressions** file hides findings by rule id, code or fingerprint (all that an entry gives
  must match), each with a reason and an optional expiry date; an expired entry hides nothing and
  is reported so someone renews or removes it.

    suppressions:
      - rule: link-failed-connection-refused
        reason: the peer restarts during the nightly soak test (TICKET-12)
        expires: 2026-03-01
      - code: LLM_NOT_YET_LINK        # name, hex or decimal
        reason: ...

Reports and the exit code then cover only what is left; the JSON report says what was hidden
and why.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import DDTriageError
from ..core.records import Finding, RuleTexts
from ..core.serial import finding_dict

if TYPE_CHECKING:
    from ..knowledge.catalog import Catalog

BASELINE_VERSION = 1


class KnownErrorsError(DDTriageError):
    """A baseline or suppressions file that cannot be used (named with its reason)."""


@dataclass(frozen=True)
class BaselineEntry:
    """One fingerprint of a baseline, with what it looked like when recorded."""

    fingerprint: str
    code: str
    name: str | None
    api: str | None
    rule: str
    count: int
    example: str  # "source:line" of its first finding then

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "code": self.code, "name": self.name, "api": self.api,
                "rule": self.rule, "count": self.count, "example": self.example}


@dataclass(frozen=True)
class Suppression:
    """One entry of a suppressions file."""

    index: int  # 1-based position in the file
    reason: str
    rule: str | None = None
    code: int | None = None
    fingerprint: str | None = None
    expires: date | None = None

    def matches(self, f: Finding) -> bool:
        return ((self.rule is None or f.rule == self.rule)
                and (self.code is None or int(f.code, 16) == self.code)
                and (self.fingerprint is None or f.fingerprint == self.fingerprint))

    def describe(self) -> str:
        """`#2 (rule x, code 0x5010B009)`."""
        keys = [f"rule {self.rule}" if self.rule else "", f"code 0x{self.code:08X}" if self.code is not None else "",
                f"fingerprint {self.fingerprint}" if self.fingerprint else ""]
        return f"#{self.index} ({', '.join(k for k in keys if k)})"

    def to_dict(self) -> dict[str, Any]:
        return {"entry": self.index, "rule": self.rule,
                "code": f"0x{self.code:08X}" if self.code is not None else None,
                "fingerprint": self.fingerprint, "reason": self.reason,
                "expires": self.expires.isoformat() if self.expires else None}


@dataclass
class KnownErrors:
    """What the baseline and suppressions did to a run."""

    baseline: str | None = None  # the baseline file, as given
    new: int = 0
    known: list[Finding] = field(default_factory=list)  # in the baseline: not reported
    gone: list[BaselineEntry] = field(default_factory=list)  # in the baseline, not seen now
    suppressions: str | None = None
    suppressed: list[tuple[Finding, Suppression]] = field(default_factory=list)
    expired: list[Suppression] = field(default_factory=list)

    def to_dict(self, texts: RuleTexts) -> dict[str, Any]:
        """The JSON report's part; `texts`: the rules' remedies of the suppressed findings."""
        out: dict[str, Any] = {}
        if self.baseline is not None:
            out["baseline"] = {"file": self.baseline, "new": self.new, "known": len(self.known),
                               "gone": [g.to_dict() for g in self.gone]}
        if self.suppressions is not None:
            out["suppressed"] = [dict(finding_dict(f, texts), suppressed_by=s.to_dict()) for f, s in self.suppressed]
            out["expired_suppressions"] = [s.to_dict() for s in self.expired]
        return out


# --- baseline files ----------------------------------------------------------------------------

def baseline_entries(findings: Iterable[Finding]) -> list[BaselineEntry]:
    """One entry per fingerprint, sorted by it."""
    first: dict[str, Finding] = {}
    counts: dict[str, int] = {}
    for f in findings:
        first.setdefault(f.fingerprint, f)
        counts[f.fingerprint] = counts.get(f.fingerprint, 0) + 1
    return [BaselineEntry(fp, f.code, f.name, f.api, f.rule, counts[fp], f"{f.source}:{f.line}")
            for fp, f in sorted(first.items())]


def write_baseline(findings: Iterable[Finding], path: str | Path) -> None:
    """Record today's findings by fingerprint (deterministic: the same findings, the same bytes)."""
    write_entries(baseline_entries(findings), path)


def write_entries(entries: list[BaselineEntry], path: str | Path) -> None:
    """Write a baseline file of these entries."""
    doc = {"tool": "ddtriage", "baseline": BASELINE_VERSION, "fingerprints": [e.to_dict() for e in entries]}
    try:
        Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise KnownErrorsError(f"{path}: cannot write baseline: {exc.strerror or exc}") from None


def read_baseline(path: str | Path) -> list[BaselineEntry]:
    """The entries of a baseline file, or an error naming the file and what is wrong."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise KnownErrorsError(f"{path}: cannot read baseline: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise KnownErrorsError(f"{path}: not a ddtriage baseline (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "ddtriage" or doc.get("baseline") != BASELINE_VERSION:
        raise KnownErrorsError(f"{path}: not a ddtriage baseline (write one with --write-baseline)")
    try:
        return [BaselineEntry(str(e["fingerprint"]), str(e["code"]), e.get("name"), e.get("api"), str(e["rule"]),
                              int(e.get("count", 1)), str(e.get("example", ""))) for e in doc["fingerprints"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise KnownErrorsError(f"{path}: malformed baseline entry ({exc})") from None


# --- suppressions files ------------------------------------------------------------------------

def read_suppressions(path: str | Path, catalog: Catalog, rule_ids: Collection[str] | None = None) -> list[Suppression]:
    """The entries of a suppressions file, or an error naming the file, the entry and the field
    (`rule_ids`: the rules a `rule` may name; a name none has would hide nothing, unnoticed)."""
    import yaml  # only for a run with a suppressions file

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise KnownErrorsError(f"{path}: cannot read suppressions: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise KnownErrorsError(f"{path}: not YAML: {str(exc).splitlines()[0]}") from None
    except (ValueError, OverflowError) as exc:  # a value YAML cannot build: `expires: 2025-02-30`
        raise KnownErrorsError(f"{path}: a value that cannot be read: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("suppressions"), list):
        raise KnownErrorsError(f"{path}: expected a mapping with a `suppressions` list")
    return [_suppression(raw, i, path, catalog, rule_ids) for i, raw in enumerate(doc["suppressions"], 1)]


def _suppression(raw: object, index: int, path: str | Path, catalog: Catalog,
                 rule_ids: Collection[str] | None = None) -> Suppression:
    where = f"{path}: suppression #{index}"
    if not isinstance(raw, dict):
        raise KnownErrorsError(f"{where}: must be a mapping")
    unknown = sorted(set(raw) - {"rule", "code", "fingerprint", "reason", "expires"})
    if unknown:
        raise KnownErrorsError(f"{where}: unknown field(s): {', '.join(map(str, unknown))}")
    if not any(raw.get(k) for k in ("rule", "code", "fingerprint")):
        raise KnownErrorsError(f"{where}: needs a `rule`, `code` or `fingerprint`")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise KnownErrorsError(f"{where}: needs a `reason` (why it is safe to hide)")
    code = None
    if raw.get("code") is not None:
        found = catalog.lookup(str(raw["code"]))
        if found is None:
            raise KnownErrorsError(f"{where}: code: unknown code {raw['code']!r}")
        code = found[0] & 0xFFFFFFFF
    expires = raw.get("expires")
    if isinstance(expires, str):
        try:
            expires = date.fromisoformat(expires)
        except ValueError:
            raise KnownErrorsError(f"{where}: expires: {expires!r} is not a date like 2026-03-01") from None
    if expires is not None and (not isinstance(expires, date) or isinstance(expires, datetime)):
        # (YAML reads `2020-01-01T10:00:00` as a datetime, which a day cannot be compared with)
        raise KnownErrorsError(f"{where}: expires: must be a date like 2026-03-01")
    if raw.get("rule") and rule_ids is not None and str(raw["rule"]) not in rule_ids:
        raise KnownErrorsError(f"{where}: rule: unknown rule {raw['rule']!r} (no rule loaded has that id)")
    return Suppression(index, " ".join(reason.split()), str(raw["rule"]) if raw.get("rule") else None, code,
                       str(raw["fingerprint"]) if raw.get("fingerprint") else None, expires)


# --- applying them -----------------------------------------------------------------------------

