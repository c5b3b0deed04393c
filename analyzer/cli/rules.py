"""`ddtriage rules list|check|export`: the remedy rules in effect, proof of their examples, and the
knowledge exported for MindCluster FaultDiag."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core.errors import DDTriageError
from ..knowledge.catalog import Code
from .base import EXIT_ERROR, cli, fail, load_rules, rules_option


@cli.group()
def rules() -> None:
    """List, check or export remedy rules."""


@rules.command("list")
@rules_option
def rules_list(rules_dirs: tuple[Path, ...]) -> None:
    """List every rule: id, action, codes and conditions."""
    from ..knowledge.explain import describe_rule

    try:
        ruleset = load_rules(rules_dirs)
    except DDTriageError as exc:
        fail(str(exc))
    catalog = ruleset.catalog
    for rule in sorted(ruleset.rules, key=lambda r: (r.default, r.id)):
        if rule.codes is None:
            codes = "unknown codes"
        else:
            codes = ", ".join(sorted(_code_name(catalog.get(v), v) for v in rule.codes))
        click.echo(f"{rule.id:<36} {rule.action:<16} {codes}")
        view = describe_rule(rule)
        if view["when"] != "any context":
            click.echo(f"{'':<36} when {view['when']}")


@rules.command("check")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
def rules_check(directory: Path | None) -> None:
    """Validate rules (built-in plus DIRECTORY) and prove every rule's example lines."""
    from ..run.rulecheck import check_examples

    try:
        ruleset = load_rules([directory] if directory else [])
    except DDTriageError as exc:
        fail(str(exc))
    notes: list[str] = []
    problems = check_examples(ruleset, notes)
    for note in notes:
        click.echo(f"ddtriage: note: {note}", err=True)
    for problem in problems:
        click.echo(f"ddtriage: error: {problem}", err=True)
    if problems:
        sys.exit(EXIT_ERROR)
    click.echo(f"{len(ruleset.rules)} rules OK ({len(ruleset.sources)} files)")


def _code_name(code: Code | None, value: int) -> str:
    return code.name if code is not None else hex(value)


@rules.command("export")
@click.option("--format", "fmt", type=click.Choice(["ascend-fd"]), default="ascend-fd", show_default=True,
              help="ascend-fd: a MindCluster FaultDiag custom fault-entity file (`ascend-fd entity --update FILE`).")
@click.option("--output", "-o", "output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE", help="Where to write it.")
@rules_option
def rules_export(fmt: str, output: Path, rules_dirs: tuple[Path, ...]) -> None:
    """Export the catalog, context rules and neighbour families for another tool."""
    from ..knowledge.faultdiag import write_faultdiag

    try:
        count = write_faultdiag(load_rules(rules_dirs, "en"), output, load_rules(rules_dirs, "zh"))
    except DDTriageError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(f"{output}: {exc}")
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}")
    click.echo(f"{count} FaultDiag entries written to {output}; load them with: ascend-fd entity --update {output}")
