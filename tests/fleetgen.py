"""A generated fleet of bundles for the fleet tests: copies of sample_logs' two nodes, renamed,
re-timed and re-pidded, as collector `.tar.gz` bundles, zips and plain folders, plus one node
with a big plain plog (split into byte ranges when `parallel.SPLIT_MIN_BYTES` is set low).

Every node logs the same failures with other times, pids and request ids: their fingerprints
recur across bundles, which is what a real fleet looks like."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

from bundles import collector_bundle

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
PIDS = {"decode-node-2": "5569", "prompt-node-1": "4811"}


def _retimed(data: bytes, minute: int, pid: str, new_pid: str) -> bytes:
    text = data.decode("utf-8")
    return text.replace("03:40:", f"03:{minute:02d}:").replace(pid, new_pid).encode("utf-8")


def make_node(root: Path, i: int) -> Path:
    """Folder `root/<kind>-node-<i>/` with a re-timed copy of a sample node's logs."""
    template = "decode-node-2" if i % 2 else "prompt-node-1"
    name = f"{template.split('-')[0]}-node-{i}"
    pid, new_pid = PIDS[template], str(6000 + i)
    for path in sorted((SAMPLES / template).rglob("*")):
        if path.is_file():
            rel = str(path.relative_to(SAMPLES / template)).replace(pid, new_pid)
            out = root / name / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(_retimed(path.read_bytes(), 10 + i % 45, pid, new_pid))
    return root / name


def make_fleet(root: Path, nodes: int = 42, big_copies: int = 60) -> Path:
    """`root/fleet/` with `nodes` bundles (a third `.tar.gz` from the collector, a third `.zip`,
    a third plain folders) and `big-node-0/` whose one plog is `big_copies` sample plogs long.
    Returns the fleet folder."""
    fleet = root / "fleet"
    work = root / "work"
    fleet.mkdir(parents=True)
    for i in range(1, nodes + 1):
        node = make_node(work, i)
        if i % 3 == 0:
            (fleet / f"{node.name}.tar.gz").write_bytes(collector_bundle(node))
        elif i % 3 == 1:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for path in sorted(node.rglob("*")):
                    if path.is_file():
                        zf.writestr(str(path.relative_to(work)), path.read_bytes())
            (fleet / f"{node.name}.zip").write_bytes(buf.getvalue())
        else:
            shutil.copytree(node, fleet / node.name)
    plog = SAMPLES / "decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log"
    big = fleet / "big-node-0/ascend/log/debug/plog/plog-7777_20251112034002789.log"
    big.parent.mkdir(parents=True)
    with big.open("wb") as out:
        for copy in range(big_copies):
            out.write(_retimed(plog.read_bytes(), 10 + copy % 45, "5569", "7777"))
    shutil.rmtree(work)
    return fleet
