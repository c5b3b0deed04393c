#!/usr/bin/env python3
"""Deterministic generator of a synthetic CANN host plog for benchmarking ddtriage.

    python3 bench/gen_plog.py --size 1G --density sparse OUT.log

Writes OUT.log and a sidecar OUT.log.expected.json that says how many
code-bearing lines were planted (total, per print form, per code) and how the
file was made, so a benchmark can check that a scanner found them all and can
tell whether a cached file is still the one it asked for.

Lines follow the host plog grammar of shared/domain.md §6
    [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-hh:mm:ss.mmm.uuu [file.cc:LINE]TID Func: message
with GE / HCCL / RUNTIME / ASCENDCL modules, mostly INFO/DEBUG noise, a few
header variants and some short continuation lines. Every line is 34..314 bytes
plus its newline (so 35..315 bytes with it).

Density: "sparse" plants one code-bearing line per 2,000 lines, "dense" one per
20. Code-bearing lines cycle through the print forms of domain.md §5:
    plog ErrorNo (decimal + description), the generic ErrorNo 4294967295(failed)
    echo, upper-case hex 0x5010B0xx, lower-case hex 0x5010b0xx, the Python enum
    LLMStatusCode.LLM_*, and a C++ printf "ret = 13432709xx".
Noise lines never match the benchmark pattern (BENCH_PATTERN): no 10-digit
numbers, no "0x5010", no "LLM_", no "4294967295"; so `grep -E -c BENCH_PATTERN`
on the output must print exactly the planted count.

Only the standard library is used. Output is a pure function of
(size, density, seed, GENERATOR_VERSION).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import re
import sys
import time

GENERATOR_VERSION = 1
DEFAULT_SEED = 20251110

# What ddtriage looks for, as one ERE usable by grep -E and rg alike.
BENCH_PATTERN = (
    r"0x5010[bB]0[0-9a-fA-F]{2}|134327(09|10|11)[0-9]{2}|LLM_[A-Z_]+|4294967295"
)

DENSITY_INTERVAL = {"sparse": 2000, "dense": 20}

MIN_LINE = 34   # bytes, without the newline
MAX_LINE = 314  # bytes, without the newline (315 with it)

# ---------------------------------------------------------------------------
# Catalog subset (domain.md §2): n -> (C++ name, Python enum name, plog description)
CODES = {
    1: ("LLM_WAIT_PROC_TIMEOUT", "LLM_WAIT_PROCESS_TIMEOUT", "request wait to be processed timeout!"),
    2: ("LLM_KV_CACHE_NOT_EXIST", "LLM_KV_CACHE_NOT_EXIST", "kv cache not exit!"),
    3: ("LLM_REPEAT_REQUEST", "LLM_REPEAT_REQUEST", "repeat request!"),
    4: ("LLM_REQUEST_ALREADY_COMPLETED", "LLM_REQUEST_ALREADY_COMPLETED", "request already complete!"),
    5: ("LLM_PARAM_INVALID", "LLM_PARAM_INVALID", "parameter is invalid!"),
    6: ("LLM_ENGINE_FINALIZED", "LLM_ENGINE_FINALIZED", "llm engine finalized!"),
    7: ("LLM_NOT_YET_LINK", "LLM_NOT_YET_LINK", "local cluster is not linked with remote cluster!"),
    8: ("LLM_ALREADY_LINK", "LLM_ALREADY_LINK", "local cluster is already linked with remote cluster!"),
    9: ("LLM_LINK_FAILED", "LLM_LINK_FAILED", "local cluster link with remote cluster failed!"),
    10: ("LLM_UNLINK_FAILED", "LLM_UNLINK_FAILED", "local cluster unlink with remote cluster failed!"),
    11: ("LLM_NOTIFY_PROMPT_UNLINK_FAILED", "LLM_NOTIFY_PROMPT_UNLINK_FAILED",
         "local cluster notify remote cluster do unlink failed!"),
    12: ("LLM_CLUSTER_NUM_EXCEED_LIMIT", "LLM_CLUSTER_NUM_EXCEED_LIMIT", "cluster num exceed limit!"),
    13: ("LLM_PROCESSING_LINK", "LLM_PROCESSING_LINK", "link is current processing, try again later!"),
    14: ("LLM_DEVICE_OUT_OF_MEMORY", "LLM_DEVICE_OUT_OF_MEMORY", "device out of memory!"),
    15: ("LLM_PREFIX_ALREADY_EXIST", "LLM_PREFIX_ALREADY_EXIST", "Prefix has already existed."),
    16: ("LLM_PREFIX_NOT_EXIST", "LLM_PREFIX_NOT_EXIST", "Prefix does not exist."),
    17: ("LLM_SEQ_LEN_OVER_LIMIT", "LLM_SEQ_LENOVERLIMIT", "Sequence length exceed limit."),
    18: ("LLM_NO_FREE_BLOCK", "LLM_NO_FREE_BLOCK", "No free block."),
    19: ("LLM_BLOCKS_OUT_OF_MEMORY", "LLM_BLOCKS_OUT_OF_MEMORY", "Block is out of memory."),
    24: ("LLM_EXIST_LINK", "LLM_EXIST_LINK", "Link existed when switching role, unlink before switch."),
    25: ("LLM_FEATURE_NOT_ENABLED", "LLM_FEATURE_NOT_ENABLED", "Feature is not enabled."),
    26: ("LLM_TIMEOUT", "LLM_TIMEOUT", "Process timeout."),
    27: ("LLM_LINK_BUSY", "LLM_LINK_BUSY", "Current link is busy."),
    28: ("LLM_OUT_OF_MEMORY", "LLM_OUT_OF_MEMORY", "Out of memory."),
}
KNOWN_N = sorted(CODES)
UNKNOWN_N = 0x2A  # a 0x5010B0xx code the catalog does not know: must be reported, not dropped
BASE = 0x5010B000

# (Func, file, trailing text) contexts in which a code-bearing line is printed.
CODE_CONTEXTS = [
    ("LinkClusters", "llm_link_manager.cc", "[GE][MODULE]Failed to link clusters, index = 0"),
    ("PullCache", "data_cache_engine.cc", "[GE][MODULE]Failed to pull cache, req_id = {r}"),
    ("PullKvBlocks", "llm_datadist_v2.cc", "[GE][MODULE]pull blocks failed, remote_cluster_id = {c}"),
    ("UnlinkClusters", "llm_link_manager.cc", "[GE][MODULE]Failed to unlink clusters, index = 1"),
    ("SetRole", "llm_datadist.cc", "[GE][MODULE]switch role failed, role = Decoder"),
    ("PushKvBlocks", "data_cache_engine.cc", "[HIXL]push blocks failed, layer_index = {l}"),
    ("AllocateCache", "cache_manager.cc", "[GE][MODULE]allocate cache failed, num_blocks = {b}"),
    ("TransferCacheAsync", "llm_datadist.cc", "[GE][MODULE]transfer cache failed, req_id = {r}"),
]

FORMS = ["plog_errorno", "generic_echo", "hex_upper", "hex_lower", "python_enum", "cpp_ret"]


def parse_size(text: str) -> int:
    """'1G', '64M', '512K', '1.5GiB', '1000000' -> bytes (binary multiples)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (use e.g. 64M, 1G)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    n = int(float(m.group(1)) * mult)
    if n < 4096:
        raise argparse.ArgumentTypeError("size must be at least 4K")
    return n


# ---------------------------------------------------------------------------
# Noise

PID = 4811
PNAME = "python3"

MODULES = {
    # module: (weight, [(file, [funcs])])
    "GE": (40, [
        ("llm_link_manager.cc", ["LinkClusters", "UnlinkClusters", "CheckLinkStatus", "Connect"]),
        ("llm_datadist.cc", ["LLMDataDistInitialize", "LinkLlmClusters", "SetRole", "Finalize"]),
        ("data_cache_engine.cc", ["PullCache", "PullCacheByGet", "FindCacheEntry", "PushKvBlocks"]),
        ("cache_manager.cc", ["AllocateCache", "DeallocateCache", "RegisterKvCache", "CopyKvBlocks"]),
        ("msg_handler_plugin.cc", ["Connect", "HandleRequest", "OnMessage"]),
        ("link_msg_handler.cc", ["Connect", "ProcessLinkRequest", "SendResponse"]),
        ("graph_manager.cc", ["BuildGraph", "RunGraph", "OptimizeGraph", "PreRun"]),
        ("ge_api.cc", ["AddGraph", "RunGraphAsync", "Initialize", "GEFinalize"]),
        ("model_executor.cc", ["ExecuteGraph", "RunThread", "ModelLoad"]),
        ("davinci_model.cc", ["InitTaskInfo", "SyncExecModel", "CopyInputData"]),
    ]),
    "HCCL": (20, [
        ("hccl_comm.cc", ["HcclCommPrepare", "HcclCommInitRootInfo", "InitCommResource"]),
        ("transport_manager.cc", ["CreateLink", "CreateTransport", "WaitLinkReady"]),
        ("hccl_socket.cc", ["Connect", "Accept", "Send", "Recv"]),
        ("op_base.cc", ["HcclAllReduce", "HcclBroadcast", "HcclSend"]),
        ("heartbeat.cc", ["SendHeartBeat", "ProcessHeartBeat", "CheckStatus"]),
    ]),
    "RUNTIME": (28, [
        ("runtime.cc", ["rtMemcpyAsync", "rtMalloc", "rtFree", "rtSetDevice"]),
        ("stream.cc", ["rtStreamSynchronize", "rtStreamCreate", "SubmitTask"]),
        ("device.cc", ["DeviceInit", "GetDeviceStatus", "DevMemAlloc"]),
        ("api_impl.cc", ["MemcpyAsync", "EventRecord", "KernelLaunch"]),
        ("npu_driver.cc", ["DevMemAlloc", "MemCopySync", "GetRunMode"]),
        ("context.cc", ["ContextCreate", "Synchronize", "TearDown"]),
    ]),
    "ASCENDCL": (12, [
        ("acl_rt.cpp", ["aclrtMalloc", "aclrtMemcpy", "aclrtSynchronizeStream", "aclrtSetDevice"]),
        ("acl_model.cpp", ["aclmdlExecute", "aclmdlLoadFromFile", "aclmdlUnload"]),
        ("memory.cpp", ["aclrtFree", "aclrtMallocHost", "aclrtMemset"]),
    ]),
}

# message kinds (see Noise.message) each module prints
MSG_KINDS = {
    "GE": [0, 1, 1, 2, 2, 3, 4, 5, 11, 12, 12, 13, 14, 14, 16, 17],
    "HCCL": [0, 8, 9, 9, 10, 15, 15, 17],
    "RUNTIME": [6, 6, 7, 7, 8, 12, 17],
    "ASCENDCL": [6, 7, 11, 12, 17],
}

LEVELS = [("DEBUG", 44), ("INFO", 50), ("WARNING", 3), ("EVENT", 2), ("ERROR", 1)]

WORDS = ["prefill", "decoder", "kv_cache", "block_table", "layer", "tensor", "stream",
         "event", "device", "host", "buffer", "remote", "local", "rank", "cluster",
         "request", "prefix", "graph", "node", "task", "queue", "socket", "link",
         "transfer", "register", "memory", "pool", "option", "model", "session"]


class Noise:
    """Builds noise-line tails. Every number is < 10 digits; no 'LLM_', '0x5010', '4294967295'."""

    def __init__(self, rng: random.Random, pid: int = PID, pname: str = PNAME):
        self.r = rng
        self.pid = pid
        self.pname = pname
        self.mods = list(MODULES)
        self.mod_w = [MODULES[m][0] for m in self.mods]

    def _n(self, hi=100000):
        return self.r.randrange(hi)

    def _ip(self):
        r = self.r
        return f"{r.choice((10, 172, 192))}.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}"

    def _addr(self):
        return f"0x{self.r.choice(('ffff', 'fffe', '12c0', '1240'))}{self.r.getrandbits(32):08x}"

    def _shape(self):
        r = self.r
        return "[" + ", ".join(str(r.choice((1, 2, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)))
                               for _ in range(r.randrange(2, 5))) + "]"

    def message(self, module: str, level: str) -> str:
        r, n = self.r, self._n
        if level == "ERROR":
            c = r.randrange(5)
            if c == 0:
                return f"[HCCL][Socket]socket recv failed, errno = {r.choice((104, 110, 111))}, fd = {n(1024)}, retry = {n(5)}"
            if c == 1:
                return f"call hccl op failed, hcclRet -> {r.choice((4, 9, 12, 19))}, rank = {n(16)}"
            if c == 2:
                return f"rtStreamSynchronize execute failed, reason = stream sync timeout, stream_id = {n(64)}"
            if c == 3:
                return f"[GE][MODULE]Check param failed, name = {r.choice(WORDS)}, value = {n()}"
            return f"Connection refused, remote ip = {self._ip()}, port = {r.randrange(20000, 30000)}"
        k = r.choice(MSG_KINDS[module])
        if k == 0:
            return (f"Start to link cluster, remote_cluster_id = {n(64)}, remote_ip = {self._ip()}, "
                    f"port = {r.randrange(20000, 30000)}, timeout = {n(10000)} ms")
        if k == 1:
            return (f"[GE][MODULE]cache_id = {n()}, num_blocks = {n(8192)}, block_size = {r.choice((16, 128, 256))}, "
                    f"dtype = DT_{r.choice(('FLOAT16', 'BF16', 'INT8'))}, shape = {self._shape()}")
        if k == 2:
            return (f"Pull cache success, req_id = {n(10**8)}, prefix_id = {n(100)}, model_id = {n(8)}, "
                    f"cost = {n(90000)} us")
        if k == 3:
            return f"Node {r.choice(WORDS)}_{n(999)} run success, stream_id = {n(64)}, task_id = {n(65536)}"
        if k == 4:
            return (f"Options: llm.SyncKvCacheWaitTime = {n(20000)}, llm.EnableSwitchRole = {n(2)}, "
                    f"ge.exec.deviceId = {n(16)}, ge.resourceConfigPath = /home/ma-user/config/{r.choice(WORDS)}.json, "
                    f"llm.listenIpInfo = {self._ip()}:{r.randrange(20000, 30000)}")
        if k == 5:
            return f"Query link status success, ret = 0, cluster_id = {n(64)}"
        if k == 6:
            return (f"Malloc device memory, addr = {self._addr()}, size = {n(10**9)}, "
                    f"type = {r.choice(('RT_MEMORY_HBM', 'RT_MEMORY_DDR', 'RT_MEMORY_P2P_HBM'))}")
        if k == 7:
            return f"memcpy async, dst = {self._addr()}, src = {self._addr()}, count = {n(10**8)}, kind = {n(4)}"
        if k == 8:
            return f"stream_id = {n(64)}, task_id = {n(65536)}, sqe_type = {n(16)}, pos = {n(1024)}"
        if k == 9:
            return (f"[{r.choice(('HCCL_TRACE', 'HCCL_INFO'))}]comm init, rank_id = {n(16)}, rank_size = {r.choice((2, 4, 8, 16))}, "
                    f"server_id = {self._ip()}, device_ip = {self._ip()}")
        if k == 10:
            return f"heartbeat to {self._ip()} ok, lost = 0, cost = {n(5000)} us"
        if k == 11:
            return f"Execute model {n(8)} success, iteration = {n(10**6)}, cost = {n(90000)} us"
        if k == 12:
            parts = ", ".join(f"{r.choice(WORDS)}_{i}: {self._shape()}" for i in range(r.randrange(3, 12)))
            return f"Graph inputs: {parts}"
        if k == 13:
            return f"Free block count {n(8192)}, used {n(8192)}, total {r.choice((4096, 8192))}"
        if k == 14:
            return f"Register blocks cache, cache_id = {n()}, addrs = [{self._addr()}, {self._addr()}], remote_accessible = {r.choice(('true', 'false'))}"
        if k == 15:
            return f"Recv {r.choice(WORDS)} request, req_id = {n(10**8)}, size = {n(10**7)}, from rank {n(16)}"
        if k == 16:
            return f"[GE][MODULE]{r.choice(WORDS)} {r.choice(WORDS)} {r.choice(WORDS)} finished, cost = {n(90000)} us"
        return f"Set {r.choice(WORDS)} {r.choice(WORDS)} = {n()}"

    def header_and_tail(self):
        """-> (head, tail): line = head + timestamp + tail."""
        r = self.r
        mod = r.choices(self.mods, self.mod_w)[0]
        level = r.choices([lv for lv, _ in LEVELS], [w for _, w in LEVELS])[0]
        file, funcs = r.choice(MODULES[mod][1])
        func = r.choice(funcs)
        PID, PNAME = self.pid, self.pname  # noqa: N806 - same names as the module defaults
        tid = PID + 1 + r.randrange(64)
        v = r.randrange(400)  # rare header variants seen in the wild
        if v == 0:
            head = f"[{level}] {mod}({PID}, {PNAME}):"
        elif v == 1:
            head = f"[{level}] {mod}({PID},):"
        elif v == 2:
            head = f"[{level}] {mod}({PID},{PNAME}) :"
        else:
            head = f"[{level}] {mod}({PID},{PNAME}):"
        msg = self.message(mod, level)
        if r.random() < 0.5:
            msg += f", session_id = {r.randrange(10**6)}, graph_id = {r.randrange(1000)}"
        if mod == "HCCL":
            tail = f" [{file}:{r.randrange(30, 3000)}] [{tid}][{r.choice(('HCCL_TRACE', 'Tag', 'HCCP'))}]{func}: {msg}"
        else:
            tail = f" [{file}:{r.randrange(30, 3000)}]{tid} {func}: {msg}"
        return head, tail

    def continuation(self) -> str:
        """A short headerless line (wrapped or dumped text), 34..~90 bytes."""
        r = self.r
        c = r.randrange(3)
        if c == 0:
            s = f"    rank_id: {r.randrange(16)}, device_id: {r.randrange(16)}, ip: {self._ip()}"
        elif c == 1:
            s = f"    {r.choice(WORDS)}_{r.randrange(99)} shape = {self._shape()}"
        else:
            s = f"  tensor[{r.randrange(4096)}]: {self._addr()} size {r.randrange(10**6)}"
        if len(s) < MIN_LINE:
            s = s + " " * (MIN_LINE - len(s))
        return s


# ---------------------------------------------------------------------------
# Code-bearing lines

def code_line(k: int, head_ts: str, pid: int = PID, pname: str = PNAME) -> tuple[str, str, str]:
    """k-th planted line (k counts from 0). -> (line without newline, form, code key)."""
    PID, PNAME = pid, pname  # noqa: N806 - same names as the module defaults
    form = FORMS[k % len(FORMS)]
    cyc = k // len(FORMS)
    func, file, trail = CODE_CONTEXTS[cyc % len(CODE_CONTEXTS)]
    trail = trail.format(r=1000 + cyc % 90000, c=cyc % 8, l=cyc % 80, b=cyc % 8192)
    lineno = 100 + (cyc * 37) % 900
    tid = PID + 1 + cyc % 64
    pre = f"[ERROR] GE({PID},{PNAME}):{head_ts} [{file}:{lineno}]{tid} {func}: "
    if form == "plog_errorno":
        n = KNOWN_N[cyc % len(KNOWN_N)]
        body = f"ErrorNo: {BASE + n}({CODES[n][2]}) {trail}"
        key = CODES[n][0]
    elif form == "generic_echo":
        body = f"ErrorNo: 4294967295(failed) {trail}"
        key = "LLM_FAILED"
    elif form in ("hex_upper", "hex_lower", "cpp_ret"):
        pool = KNOWN_N + [UNKNOWN_N]
        n = pool[cyc % len(pool)]
        key = CODES[n][0] if n in CODES else f"0x{BASE + n:08X}"
        if form == "hex_upper":
            body = f"call {func} failed, ret = 0x{BASE + n:08X}, {trail}"
        elif form == "hex_lower":
            body = f"got status 0x{BASE + n:08x} at {func}, layer_index = {cyc % 80}"
        else:
            pre = f"[ERROR] GE({PID},{PNAME}):{head_ts} [llm_datadist.cc:{lineno}]{tid} LLMDataDistInitialize: "
            body = f"Initialize failed, ret = {BASE + n}"
    else:  # python_enum
        n = KNOWN_N[cyc % len(KNOWN_N)]
        body = (f"{func} failed, error code is LLMStatusCode.{CODES[n][1]}, "
                f"req_id = {1000 + cyc % 90000}.")
        key = CODES[n][0]
    return (pre + body)[:MAX_LINE], form, key


# ---------------------------------------------------------------------------

class _Clock:
    """Monotonic plog timestamps, formatted cheaply (date part cached per second)."""

    def __init__(self):
        self.epoch = _dt.datetime(2025, 11, 10, 15, 36, 33)
        self.sec = -1
        self.sec_str = ""

    def stamp(self, t_us: int) -> str:
        s, frac = divmod(t_us, 1_000_000)
        if s != self.sec:
            self.sec = s
            self.sec_str = (self.epoch + _dt.timedelta(seconds=s)).strftime("%Y-%m-%d-%H:%M:%S")
        ms, us = divmod(frac, 1000)
        return f"{self.sec_str}.{ms:03d}.{us:03d}"


def generate(path: str, size: int, density: str, seed: int = DEFAULT_SEED,
             quiet: bool = False) -> dict:
    """Write the plog to `path` (and `path`.expected.json); return the expected dict."""
    if density not in DENSITY_INTERVAL:
        raise ValueError(f"density must be one of {sorted(DENSITY_INTERVAL)}")
    interval = DENSITY_INTERVAL[density]
    rng = random.Random(f"{seed}:{density}:{GENERATOR_VERSION}")
    noise = Noise(rng)
    clock = _Clock()

    POOL = 1 << 15          # distinct noise tails kept; refreshed as we go
    pool = [noise.header_and_tail() for _ in range(POOL)]
    CONT = 1024
    conts = [noise.continuation() for _ in range(CONT)]
    REFRESH = 512           # pool entries rebuilt per chunk, for variety
    CHUNK = 8192            # lines per chunk

    t_us = 0
    written = 0
    lines = 0
    planted = 0
    by_form = dict.fromkeys(FORMS, 0)
    by_code: dict[str, int] = {}
    offset = interval // 2  # first planted line index
    start = time.perf_counter()
    tmp = path + ".tmp"
    budget = size
    with open(tmp, "wb", buffering=0) as f:
        buf: list[str] = []
        buf_bytes = 0
        done = False
        while not done:
            idx = rng.choices(range(POOL), k=CHUNK)
            deltas = rng.choices(range(1, 400), k=CHUNK)
            kinds = rng.choices(range(100), k=CHUNK)
            for j in range(CHUNK):
                t_us += deltas[j]
                if (lines - offset) % interval == 0 and lines >= offset:
                    line, form, key = code_line(planted, clock.stamp(t_us))
                    is_code = True
                elif kinds[j] == 0:
                    line = conts[idx[j] % CONT]
                    is_code = False
                else:
                    head, tail = pool[idx[j]]
                    line = head + clock.stamp(t_us) + tail
                    if len(line) > MAX_LINE:
                        line = line[:MAX_LINE].rstrip(" ,")
                    is_code = False
                n = len(line) + 1
                if written + buf_bytes + n > budget:
                    done = True
                    break
                buf.append(line)
                buf_bytes += n
                lines += 1
                if is_code:
                    planted += 1
                    by_form[form] += 1
                    by_code[key] = by_code.get(key, 0) + 1
            for _ in range(REFRESH):
                pool[rng.randrange(POOL)] = noise.header_and_tail()
            if buf_bytes >= (8 << 20) or done:
                buf.append("")
                data = "\n".join(buf).encode("ascii")
                f.write(data)
                written += len(data)
                buf = []
                buf_bytes = 0
                if not quiet and sys.stderr.isatty():
                    print(f"\r  {path}: {written / (1 << 20):8.0f} MiB", end="", file=sys.stderr)
    os.replace(tmp, path)
    elapsed = time.perf_counter() - start
    if not quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    expected = {
        "generator": "bench/gen_plog.py",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "density": density,
        "interval_lines": interval,
        "size_requested": size,
        "bytes": written,
        "lines": lines,
        "planted": planted,
        "planted_specific": planted - by_form["generic_echo"],
        "planted_by_form": by_form,
        "planted_by_code": dict(sorted(by_code.items())),
        "pattern": BENCH_PATTERN,
        "generate_seconds": round(elapsed, 2),
    }
    with open(path + ".expected.json", "w") as jf:
        json.dump(expected, jf, indent=2)
        jf.write("\n")
    return expected


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", help="output file (a sidecar PATH.expected.json is written too)")
    ap.add_argument("--size", type=parse_size, default=parse_size("64M"),
                    help="target size, e.g. 64M, 1G (binary units; default 64M)")
    ap.add_argument("--density", choices=sorted(DENSITY_INTERVAL), default="sparse",
                    help="sparse: 1 code-bearing line per 2,000; dense: 1 per 20")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    exp = generate(a.path, a.size, a.density, a.seed, quiet=a.quiet)
    print(json.dumps({k: exp[k] for k in ("bytes", "lines", "planted", "planted_specific",
                                          "planted_by_form", "generate_seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
