"""Driver (DRV module) errors are a neighbour family (review D22): an `[ERROR] DRV(...)` line
naming device out of memory, an HBM ECC error or a link down is a related error, the likely cause
of the LLM-DataDist failure logged just after it in the same thread, and an incident's lead. Its
prefilter literal is the error header itself, so the driver's INFO traffic costs nothing."""

from __future__ import annotations

import json

from analyzer.cli import cli
from click.testing import CliRunner

LOG = """\
[INFO] DRV(5569,python3):2025-11-12-03:40:03.900.000 [ascend][curpid:5569,5573][drv][devmm][devmm_alloc 100] alloc 64 MiB, out of memory retries 0
[ERROR] DRV(5569,python3):2025-11-12-03:40:04.000.000 [ascend][curpid:5569,5573][drv][devmm][devmm_alloc 100] out of memory
[ERROR] GE(5569,python3):2025-11-12-03:40:04.100.500 [llm_datadist.cc:400]5573 AllocateCache: ErrorNo: 1343270926(device out of memory!) [GE][MODULE]alloc failed
[ERROR] DRV(5569,python3):2025-11-12-03:40:09.000.000 [ascend][curpid:5569,5580][drv][ecc] device 3 HBM multi-bit ECC error
[ERROR] DRV(5569,python3):2025-11-12-03:40:09.500.000 [ascend][curpid:5569,5581][drv][hccs] port 2 link down
"""


def test_a_driver_error_is_the_cause_and_a_related_error(tmp_path):
    log = tmp_path / "plog-5569_20251112034002789.log"
    log.write_text(LOG)
    result = CliRunner().invoke(cli, ["scan", str(log), "--format", "json", "--fail-on", "never"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    (finding,) = report["findings"]
    assert finding["name"] == "LLM_DEVICE_OUT_OF_MEMORY"
    assert [(c["line"], c["family"], c["code"]) for c in finding["causes"]] == [(2, "driver", "out-of-memory")]
    assert [(e["line"], e["family"], e["code"]) for e in report["related"]] == [
        (2, "driver", "out-of-memory"), (4, "driver", "hbm-ecc"), (5, "driver", "link-down")]
    (incident,) = report["summary"]["incidents"]
    assert (incident["lead"]["line"], incident["lead"]["family"]) == (2, "driver")
    assert incident["action"].startswith("The driver ran out of device memory (HBM): free device memory")
