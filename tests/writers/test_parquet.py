"""The Parquet writer's memory (issue #12: peak RSS at most 200 MiB; review D16): findings are
written in row groups of at most `ROW_GROUP` as they stream from the store, so a storm's report
costs about what the JSON writer's does, not a row group of 65,536 findings held as Python values.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from analyzer.writers.parquet import ROW_GROUP

from hostile import FINDING, ROOT

pq = pytest.importorskip("pyarrow.parquet")
# VmHWM, not getrusage(): ru_maxrss survives exec, so a child of a big pytest process would
# report pytest's own peak.
MEASURED = ("import sys; from analyzer.cli import main; sys.argv[0] = 'ddtriage'; out = sys.argv.pop()\n"
            "try:\n    main()\nfinally:\n"
            "    hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
            "    print(hwm, file=open(out, 'w'))")


def peak_mib(tmp_path, *args: str) -> float:
    """Peak RSS (MiB) of `ddtriage ARGS` run in its own process."""
    where = tmp_path / "peak.txt"
    subprocess.run([sys.executable, "-c", MEASURED, *args, str(where)], check=False, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    return int(where.read_text()) / 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_storm_to_parquet_stays_under_200_mib_in_small_row_groups(tmp_path):
    storm = tmp_path / "storm.log"
    with storm.open("w") as out:  # 70,000 findings: more than a row group of the old 65,536
        for i in range(70_000):
            out.write(FINDING.replace("5571", str(5571 + i % 7)) + "\n")
    report = tmp_path / "storm.parquet"
    peak = peak_mib(tmp_path, "scan", str(storm), "-q", "-j1", "--fail-on", "never", "-o", str(report))
    assert peak <= 200, f"peak RSS {peak:.0f} MiB"
    meta = pq.ParquetFile(report).metadata
    assert meta.num_rows == 70_000
    assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= ROW_GROUP
