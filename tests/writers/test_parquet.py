"""The Parquet writer's memory (issue #12: peak RSS at most 200 MiB; review D16): findings are
written in row groups of at most `ROW_GROUP` as they stream from the store, so a storm's report
costs about what the JSON writer's does, not a row group of 65,536 findings held as Python values.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from analyzer.writers.parquet import ROW_GROUP

from hostile import FINDING, peak_mib

pq = pytest.importorskip("pyarrow.parquet")
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
