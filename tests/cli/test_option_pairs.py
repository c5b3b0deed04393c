"""Every pair of `scan` options, each with its values, on sample_logs/ (issue #16, item 7).

Two covering arrays, built once per run from the tables below (greedy, seeded: the same cases every
run): every pair (option A = a value, option B = a value) of two different options is in at least
one case.
- All options: no internal error, no traceback, an exit code of 0, 1 or 2, and an exit of 2 says
  why in one line.
- The options that change only how a report looks or how the work is spread: the findings,
  incidents and related errors equal those of the plain scan.

`--dask` is left out of the arrays (each case would start a cluster); tests/run/test_dask_cluster.py holds
Dask to the local pool. The first cases are the two defects the issue found: `--tz` with
`--since` (an aware bound met a naive stamp), and an empty `--suppressions` that dropped every
incident.
"""

from __future__ import annotations

import json
import random
from itertools import combinations
from pathlib import Path

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = str(ROOT / "sample_logs")
FORMATS = ["text", "markdown", "json", "jsonl", "sarif", "junit", "github", "github-summary", "gitlab", "csv",
           "html", "parquet"]

# option -> its values; a value is the argument list it adds ({tmp} is the case's folder).
PRESENTATION: dict[str, list[list[str]]] = {
    "--format": [["--format", f] for f in FORMATS if f != "parquet"] + [["--format", "parquet", "-o", "{tmp}/r.parquet"]],
    "--jobs": [["--jobs", "1"], ["--jobs", "2"]],
    "--quiet": [["--quiet"]],
    "--color": [["--color", c] for c in ("auto", "always", "never")],
    "--no-pager": [["--no-pager"]],
    "-C": [["-C", "0"], ["-C", "3"]],
    "--suppressions": [["--suppressions", "{tmp}/empty-suppressions.yaml"]],
    "--write-baseline": [["--write-baseline", "{tmp}/baseline.json"]],
    "--strict": [["--strict"]],
    "--allow-empty": [["--allow-empty"]],
    "--hidden": [["--hidden"]],
    "--follow": [["--follow"]],
}
OTHERS: dict[str, list[list[str]]] = {
    "--output": [["-o", "{tmp}/out.sarif"], ["-o", "markdown:{tmp}/out.txt"], ["-o", "-"]],
    "--fail-on": [["--fail-on", v] for v in ("related", "any", "unrecoverable", "never")],
    "--include": [["--include", "*.log"], ["--include", "**/plog/**"]],
    "--exclude": [["--exclude", "*device*"], ["--exclude", "!*.log"]],
    "--since": [["--since", "2025-11-12"], ["--since", "2025-11-12T10:00:00+08:00"], ["--since", "2030-01-01"]],
    "--until": [["--until", "2025-11-13"], ["--until", "2025-11-11T23:59"]],
    "--tz": [["--tz", z] for z in ("+08:00", "Asia/Shanghai", "UTC")],
    "--year": [["--year", "2025"], ["--year", "1999"]],
    "--max-bytes": [["--max-bytes", "1G"], ["--max-bytes", "2K"]],
    "--max-ratio": [["--max-ratio", "100"]],
    "--node": [["--node", "n1"]],
    "--baseline": [["--baseline", "{tmp}/known.json"]],
    "--rules": [["--rules", "{tmp}/rules"]],
}
EVERY = PRESENTATION | OTHERS


def covering(table: dict[str, list[list[str]]], seed: int = 16) -> list[dict[str, int]]:
    """Cases (option -> value index; an option left out is absent) that hold every pair of two
    options' values at least once: AETG-style, each case grown greedily from a seeded order."""
    names = sorted(table)
    todo = {((a, i), (b, j)) for a, b in combinations(names, 2)
            for i in range(len(table[a])) for j in range(len(table[b]))}
    rng, cases = random.Random(seed), []
    while todo:
        (a, i), (b, j) = min(todo)
        case = {a: i, b: j}
        order = [n for n in names if n not in case]
        rng.shuffle(order)
        for name in order:
            gains = [sum(1 for other, k in case.items()
                         if tuple(sorted(((name, v), (other, k)))) in todo) for v in range(len(table[name]))]
            best = max(range(len(gains)), key=lambda v: gains[v])
            if gains[best]:
                case[name] = best
        todo -= {tuple(sorted(pair)) for pair in combinations(case.items(), 2)}
        cases.append(case)
    return cases


def _args(table: dict[str, list[list[str]]], case: dict[str, int], tmp: Path) -> list[str]:
    out: list[str] = [] if "--jobs" in case else ["--jobs", "1"]  # a pool per case only where --jobs is asked
    for name in sorted(case):
        out += [a.replace("{tmp}", str(tmp)) for a in table[name][case[name]]]
    return out


def _prepare(tmp: Path) -> None:
    (tmp / "empty-suppressions.yaml").write_text("suppressions: []\n")
    (tmp / "known.json").write_text(json.dumps({"tool": "ddtriage", "baseline": 1, "fingerprints": []}))
    (tmp / "rules").mkdir()


def _scan(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["scan", SAMPLES, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exc_info)
    return result.exit_code, result.stdout, result.stderr


def _essence(report_path: Path) -> tuple[list, list, list]:
    report = json.loads(report_path.read_text())
    return report["findings"], report["summary"]["incidents"], report["related"]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, list, list]:
    tmp = tmp_path_factory.mktemp("plain")
    code, _, err = _scan(["-q", "-o", f"json:{tmp}/r.json"])
    assert code == 1, err
    essence = _essence(tmp / "r.json")
    assert essence[1], "sample_logs/ has incidents"
    return essence


ALL_CASES = covering(EVERY)
LOOKS_CASES = covering(PRESENTATION)


def _id(case: dict[str, int], table: dict[str, list[list[str]]]) -> str:
    return " ".join(" ".join(table[n][v]).replace("{tmp}/", "") for n, v in sorted(case.items()))


def test_the_arrays_cover_every_pair() -> None:
    for table, cases in ((EVERY, ALL_CASES), (PRESENTATION, LOOKS_CASES)):
        held = {tuple(sorted(p)) for c in cases for p in combinations(c.items(), 2)}
        wanted = {((a, i), (b, j)) for a, b in combinations(sorted(table), 2)
                  for i in range(len(table[a])) for j in range(len(table[b]))}
        assert wanted <= held
    assert len(ALL_CASES) < 120 and len(LOOKS_CASES) < 60  # cheap enough to run every time


@pytest.mark.parametrize("args", [["--tz", "+08:00", "--since", "2025-11-12"],
                                  ["--since", "2025-11-12T00:00:00+08:00"]], ids=" ".join)
def test_tz_with_since_is_no_internal_error_and_windows_related_errors_too(args: list[str], tmp_path: Path) -> None:
    code, _, err = _scan(["-q", *args, "-o", f"json:{tmp_path}/r.json"])
    assert code in (0, 1) and "internal error" not in err, err


def test_an_empty_suppressions_file_keeps_every_incident(tmp_path: Path, plain: tuple[list, list, list]) -> None:
    _prepare(tmp_path)
    code, _, err = _scan(["-q", "--suppressions", f"{tmp_path}/empty-suppressions.yaml", "-o", f"json:{tmp_path}/r.json"])
    assert code == 1, err
    assert _essence(tmp_path / "r.json") == plain


def test_a_baseline_that_knows_nothing_keeps_every_incident(tmp_path: Path, plain: tuple[list, list, list]) -> None:
    _prepare(tmp_path)
    code, _, err = _scan(["-q", "--baseline", f"{tmp_path}/known.json", "-o", f"json:{tmp_path}/r.json"])
    assert code == 1, err
    findings, incidents, related = _essence(tmp_path / "r.json")
    assert incidents == plain[1] and related == plain[2]
    assert [{k: v for k, v in f.items() if k != "baseline"} for f in findings] == plain[0]


@pytest.mark.parametrize("case", ALL_CASES, ids=[_id(c, EVERY) for c in ALL_CASES])
def test_every_pair_of_options_ends_in_a_documented_exit(case: dict[str, int], tmp_path: Path) -> None:
    _prepare(tmp_path)
    code, _, err = _scan(_args(EVERY, case, tmp_path))
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith(("ddtriage: error", "Error:", "Usage:"))]
        assert errors, err


@pytest.mark.parametrize("case", LOOKS_CASES, ids=[_id(c, PRESENTATION) for c in LOOKS_CASES])
def test_options_of_looks_and_spread_give_the_plain_scans_answers(case: dict[str, int], tmp_path: Path,
                                                                  plain: tuple[list, list, list]) -> None:
    _prepare(tmp_path)
    code, _, err = _scan([*_args(PRESENTATION, case, tmp_path), "-o", f"json:{tmp_path}/essence.json"])
    assert code == 1, err
    assert _essence(tmp_path / "essence.json") == plain
