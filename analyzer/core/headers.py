"""Line headers: which log format a line is in, and its timestamp, pid, tid and Func field.

Stage: core (record headers, parsed). Runs only on candidate lines and the few lines looked back at, never
in the scanner's hot loop. Tolerates the copy-paste damage seen in the wild (a missing `[`,
`ERR0R`, blocks flattened onto one line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast


class YearSource(Protocol):
    """Where a yearless stamp gets its year (`inputs.YearHint`): nearest to the file's own date."""

    def for_stamp(self, month_day: str) -> int | None: ...


Year = int | YearSource | None


@dataclass(frozen=True, slots=True)
class Header:
    """What the header of one record says. `msg_start` is where the message text begins."""

    fmt: str | None  # plog | vllm | glog | torch_npu | mindie | pylog | None
    timestamp: str | None
    pid: str | None
    tid: str | None
    func: str | None
    msg_start: int
    start: int = 0  # where this record starts in the line (flattened blocks hold several)
    yearless: bool = False  # the timestamp printed no year (vLLM, short glog): it was supplied
    pod: str | None = None  # the pod an envelope names: records of two pods never share a thread


# plog/device log and the llm_datadist Python logger share one grammar. Possessive and bounded
# repeats keep it linear on flattened blocks (thousands of headers on one line, some cut short):
# [LEVEL] MODULE(PID,PNAME):TIMESTAMP [file:LINE]TID Func: message
_PLOG = re.compile(
    r"\[?(?P<level>ERR[O0]R|WARNING|WARN|INFO|DEBUG|EVENT|TRACE|CRITICAL|FATAL)\]\s*"
    r"(?P<module>[A-Za-z_][\w-]*+)\s*+\(\s*+(?P<pid>\d++)\s*+,\s*+(?P<pname>[^)]{0,256}+)\)\s*+:\s*+"
    r"(?P<date>\d{4}-\d\d-\d\d)[- T](?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{1,3})(?:[.,](?P<us>\d{1,3}))?)?\s*"
    r"(?:\[(?P<file>[^\]\s:]+):(?P<fline>\d+)\]\s*)?"
)
# What follows `[file:line]`: `TID Func: msg`, HCCL `[TID][Tag]msg`, HCCP `tid:N,func(line) :`,
# DRV `[ascend][curpid:P,T][drv]`.
_PLOG_TAIL = (
    re.compile(r"(?P<tid>[\w-]+)\s+(?P<func>[A-Za-z_~][\w:.~<>]*)\s?:(?=\s|$)"),
    re.compile(r"\[(?P<tid>\d+)\](?:\[(?P<func>[^\]]*)\])?"),
    re.compile(r"tid:(?P<tid>\d+),(?P<func>[A-Za-z_]\w*)\(\d+\)\s*:"),
    re.compile(r"\[ascend\]\[curpid:\s*\d+,\s*(?P<tid>\d+)\]"),
    re.compile(r"(?P<tid>\d+)\s"),
)
_VLLM = re.compile(
    r"(?:\((?P<worker>[^()]*+)\)\s*+)*+"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?P<md>\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?\s+"
    r"\[(?P<file>[^\]\s:]+):(?P<fline>\d+)\]\s?"
)
_VLLM_PID = re.compile(r"pid=(\d+)")
# vLLM relays a worker's stderr (tracebacks, prints) with only the `(name pid=N)` prefix.
_VLLM_RELAY = re.compile(r"(?:\((?:[^()]*?\s)?pid=\d+\)\s?)+")
_GLOG = re.compile(
    r"(?P<level>[IWEF])(?P<date>\d{8}|\d{4}) (?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?\s+(?P<tid>\d+) "
    r"(?P<file>[^:\]\s]+):(?P<fline>\d+)\]\s?"
)
_TORCH = re.compile(
    r"\[(?P<level>[A-Z]+)\] (?P<date>\d{4}-\d\d-\d\d)-(?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))? "
    r"\(PID:(?P<pid>\d+), Device:-?\d+, RankID:-?\d+\)\s?"
)
_MINDIE = re.compile(
    r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?:[+-]\d\d:?\d\d|Z)?\] "
    r"\[(?P<pid>\d+)\] \[(?P<tid>\d+)\] "
    r"\[[^\]]*\] \[(?P<level>\w+)\] \[[^\]]*\]\s*:?\s?"
)
_PYLOG = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?")

_PLOG_ANYWHERE = re.compile(_PLOG.pattern)


def without_possessives(pattern: str) -> str:
    """`pattern` for Rust's regex, which has no possessive repeats: each made greedy. Only for a
    pattern where each is followed by what its class cannot match (then no match changes; Python
    keeps them, to stay linear where a line is cut short)."""
    return re.sub(r"(?<=[*+}])\+", "", pattern)


# The plog grammar as the compiled core reads the pid of a fact line with it.
PLOG_PID_PATTERN = without_possessives(_PLOG.pattern)
_LOOK_AHEAD = r"(?=\s|$)"
# The tails as the core reads them: Rust's regex has no look-ahead, so a tail's closing
# `(?=\s|$)` becomes an empty `end` group (where the match ends) and the same test, consuming;
# at the very end of a pattern that picks the same alternative, with the same groups.
CORE_TAILS = tuple(without_possessives(t.pattern[:-len(_LOOK_AHEAD)] + "(?P<end>)(?:\\s|$)")
                   if t.pattern.endswith(_LOOK_AHEAD) else without_possessives(t.pattern) for t in _PLOG_TAIL)



def core_grammar() -> tuple[str, list[str], str, str, str, str, str, str, str]:
    """Every header pattern as the compiled core's engine reads it (`ddtriage_core.Detector`): the
    plog head and tails (`PLOG_PID_PATTERN`, `CORE_TAILS`), then vLLM, its pid, its relay prefix,
    glog, torch_npu, MindIE and Python logging, possessive repeats made greedy (each is followed
    by what its class cannot match)."""
    vllm, vllm_pid, relay, glog, torch, mindie, pylog = (without_possessives(p.pattern) for p in (
        _VLLM, _VLLM_PID, _VLLM_RELAY, _GLOG, _TORCH, _MINDIE, _PYLOG))
    return (PLOG_PID_PATTERN, list(CORE_TAILS), vllm, vllm_pid, relay, glog, torch, mindie, pylog)


_core_plog: Callable[[str], tuple[str, str, str | None, str | None, int, int, bool] | None] | None = None


def use_core(headers: object | None) -> None:
    """Read plog headers with the compiled core's `PlogHeaders` (built from PLOG_PID_PATTERN and
    CORE_TAILS; None: in Python). Its `read` answers plain ASCII lines as `parse_header` does."""
    global _core_plog
    _core_plog = getattr(headers, "read", None)


def _iso(date: str, time: str, frac: str | None) -> str:
    return f"{date}T{time}.{frac[:6].ljust(6, '0')}" if frac else f"{date}T{time}"


def _yearless(month_day: str, time: str, frac: str | None, year: Year) -> str | None:
    """ISO time for a stamp that printed no year, with the year supplied (int or YearHint)."""
    y = year if year is None or isinstance(year, int) else year.for_stamp(month_day)
    return _iso(f"{y:04d}-{month_day}", time, frac) if y else None


def parse_header(line: str, year: Year = None) -> Header:
    """Parse the header at the start of `line` (after NULs and blanks). Never raises. `year` (an
    int or an `inputs.YearHint`) completes timestamps that print none."""
    if _core_plog is not None:
        got = _core_plog(line)
        if got is not None:
            return Header("plog", got[0], got[1], got[2], got[3], got[4], got[5])
    pos = len(line) - len(line.lstrip("\x00 \t\ufeff"))
    m = _PLOG.match(line, pos)
    if m:
        return _plog_header(line, m, pos)
    m = _VLLM.match(line, pos)
    if m:
        pid = None
        if m.group("worker") is not None:
            # The last (innermost) `(... pid=N)` prefix names the process.
            pids = _VLLM_PID.findall(line, pos, m.start("level"))
            pid = pids[-1] if pids else None
        ts = _yearless(m.group("md"), m.group("time"), m.group("frac"), year)
        return Header("vllm", ts, pid, None, None, m.end(), pos, yearless=True)
    m = _VLLM_RELAY.match(line, pos)
    if m:
        pid = _VLLM_PID.findall(line, pos, m.end())[-1]
        return Header("vllm", None, pid, None, None, m.end(), pos)
    m = _GLOG.match(line, pos)
    if m:
        d = m.group("date")
        if len(d) == 4:  # the default glog prefix prints no year: E1112 03:40:17.327589
            ts = _yearless(f"{d[:2]}-{d[2:]}", m.group("time"), m.group("frac"), year)
            return Header("glog", ts, None, m.group("tid"), None, m.end(), pos, yearless=True)
        return Header("glog", _iso(f"{d[:4]}-{d[4:6]}-{d[6:]}", m.group("time"), m.group("frac")),
                      None, m.group("tid"), None, m.end(), pos)
    m = _TORCH.match(line, pos)
    if m:
        return Header("torch_npu", _iso(m.group("date"), m.group("time"), m.group("frac")),
                      m.group("pid"), None, None, m.end(), pos)
    m = _MINDIE.match(line, pos)
    if m:
        return Header("mindie", _iso(m.group("date"), m.group("time"), m.group("frac")),
                      m.group("pid"), m.group("tid"), None, m.end(), pos)
    m = _PYLOG.match(line, pos)
    if m:
        return Header("pylog", _iso(m.group("date"), m.group("time"), m.group("frac")),
                      None, None, None, pos, pos)
    return Header(None, None, None, None, None, pos, pos)


def header_pid(line: str, year: Year = None) -> str | None:
    """`parse_header(line, year).pid`, without building the rest of a plog header."""
    pos = len(line) - len(line.lstrip("\x00 \t\ufeff"))
    m = _PLOG.match(line, pos)
    return m.group("pid") if m else parse_header(line, year).pid


def _plog_header(line: str, m: re.Match, start: int) -> Header:
    ms, us = m.group("ms"), m.group("us")
    frac = (ms.ljust(3, "0") + (us or "").ljust(3, "0")) if ms else None
    ts = _iso(m.group("date"), m.group("time"), frac)
    tid = func = None
    end = m.end()
    for tail in _PLOG_TAIL:
        t = tail.match(line, end)
        if t:
            tid = t.group("tid")
            func = t.groupdict().get("func")
            end = t.end()
            break
    return Header("plog", ts, m.group("pid"), tid, func or None, end, start)


_LAST: list[object] = [None, None, ()]  # the last call's line, year and answer


def record_headers(line: str, year: Year = None) -> tuple[Header, ...]:
    """Headers of every record on the line: several when plog blocks were flattened onto one.
    The engine asks twice for a hit line (its facts, then its findings): the answer is kept."""
    if line is _LAST[0] and year is _LAST[1]:
        return cast(tuple[Header, ...], _LAST[2])
    headers = _record_headers(line, year)
    _LAST[:] = [line, year, headers]
    return headers


def _record_headers(line: str, year: Year) -> tuple[Header, ...]:
    if _core_plog is not None:
        got = _core_plog(line)
        if got is not None and not got[6]:  # one record: the date does not show again
            return (Header("plog", got[0], got[1], got[2], got[3], got[4], got[5]),)
    first = parse_header(line, year)
    # A flattened block repeats the header grammar, date included: look for the date first.
    if first.fmt != "plog" or first.timestamp is None or line.find(first.timestamp[:10], first.msg_start) == -1:
        return (first,)
    headers = [first]
    for m in _PLOG_ANYWHERE.finditer(line, first.msg_start):
        headers.append(_plog_header(line, m, m.start()))
    return tuple(headers)


def header_for(headers: Sequence[Header], offset: int) -> Header:
    """The record a character offset belongs to."""
    chosen = headers[0]
    for h in headers[1:]:
        if h.start <= offset:
            chosen = h
    return chosen
