"""Stage: detect (fingerprints). What stays the same when the same failure is logged again.

A storm logs one failure thousands of times, and the next CI run logs it again with new line
numbers, times, pids, request ids and addresses. The fingerprint of a finding is a hash of
code + API + rule + the line's message *template*: the text with those variable parts masked
(Drain3-style masks, kept here as data). It names no node, bundle or file, so the same failure
on two nodes or in two runs has one fingerprint; reports that fold per node group by
(fingerprint, node).

    >>> message_template("[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 req_id=2051 10.1.0.1:26000")
    '[ERROR] GE(<N>,python<N>):<TS> req_id=<ID> <IP>'

Every mask is a linear-time pattern (no nested repetition), so an adversarial line costs time
proportional to its length.
"""

from __future__ import annotations

import re

try:
    from _blake2 import blake2b  # hashlib.blake2b itself, without importing hashlib's OpenSSL (~5 ms)
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

# (pattern, replacement), applied in order: wider shapes before the digits inside them.
MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    # Dates with times: plog 2025-11-12-03:40:05.101.002, ISO, vLLM 09-12 03:40:02, glog E20251110 15:36:33.3
    (r"\b\d{4}-\d\d-\d\d[-T ]\d\d:\d\d:\d\d(?:[.:,]\d{1,9}){0,3}(?:Z|[+-]\d\d:?\d\d)?", "<TS>"),
    (r"\b[IWEF]?\d{8} \d\d:\d\d:\d\d(?:\.\d{1,9})?", "<TS>"),
    (r"\b\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?", "<TS>"),
    (r"\b\d\d:\d\d:\d\d(?:\.\d{1,9})?", "<TS>"),
    # Request, sequence and trace ids whatever their spelling: req_id=cmpl-7f3a-…, request_id: 42
    (r"(?i)\b((?:req|request|seq|trace|span|task)[_ -]?id[\"']?\s{0,3}[=:]\s{0,3}[\"']?)[\w.:/-]{1,128}", r"\1<ID>"),
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<ID>"),
    # Addresses: IPv4 with an optional port, bracketed IPv6 with a port
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b", "<IP>"),
    (r"\[[0-9a-fA-F:]{2,39}\](?::\d{1,5})?", "<IP>"),
    # Hex numbers and long hex ids (addresses, hashes), then every remaining run of digits
    (r"\b0[xX][0-9a-fA-F]{1,16}\b", "<HEX>"),
    (r"\b[0-9a-fA-F]{12,64}\b", "<HEX>"),
    (r"\d+", "<N>"),
))



def core_masks() -> list[tuple[str, str]]:
    """The masks as the compiled core's engine applies them (a group `\\1` written `${1}`)."""
    return [(p.pattern, re.sub(r"\\(\d)", r"${\1}", r)) for p, r in MASKS]


TEMPLATE_LIMIT = 400  # characters of template kept: a storm's lines differ early, not at char 10,000


# A storm's lines differ mostly in their digits. Every mask decides by character class (digit, hex
# digit, word character), apart from the literal 0 of `0x`, and every digit ends up masked: so two
# lines that are the same once each `0x` is marked and every other ASCII digit is 1 have the same
# template. Templates are memoised on that key (a storm line's template costs ~3 us instead of
# ~35 us of substitutions). A new mask with another literal digit must be marked here too.
_ONE_DIGITS = bytes.maketrans(b"0123456789", b"1111111111")
_HEX_MARK = b"\xff"  # never in UTF-8 text
_MEMO: dict[bytes, str] = {}
MEMO_SIZE = 20000  # templates remembered (cleared when full: a storm has few)


def _memo_key(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    if b"0x" in raw or b"0X" in raw:
        raw = raw.replace(b"0x", _HEX_MARK + b"x").replace(b"0X", _HEX_MARK + b"X")
    return raw.translate(_ONE_DIGITS)


def message_template(text: str) -> str:
    """`text` with times, ids, addresses and numbers masked."""
    text = text[:TEMPLATE_LIMIT * 2]
    key = _memo_key(text)
    found = _MEMO.get(key)
    if found is None:
        if len(_MEMO) >= MEMO_SIZE:
            _MEMO.clear()
        found = _MEMO[key] = mask(text)
    return found


def mask(text: str) -> str:
    """The template, computed: every mask applied in order (what `message_template` memoises)."""
    text = text[:TEMPLATE_LIMIT * 2]
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text[:TEMPLATE_LIMIT]


def fingerprint(code: str, api: str | None, rule: str, template: str) -> str:
    """A short stable id of (code, API, rule, template): 16 hex digits."""
    key = "\x1f".join((code, api or "", rule, template))
    return blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def finding_fingerprint(code: str, api: str | None, rule: str, text: str) -> str:
    """The fingerprint of a finding from its line text."""
    return fingerprint(code, api, rule, message_template(text))
