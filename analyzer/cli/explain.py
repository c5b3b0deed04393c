"""`ddtriage explain CODE`: a code's meaning and every context remedy."""

from __future__ import annotations

from pathlib import Path

import click

from ..core.errors import DDTriageError
from .base import cli, fail, load_rules, rules_option


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("code")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option
def explain(code: str, fmt: str, rules_dirs: tuple[Path, ...]) -> None:
    """Explain CODE (hex, decimal, C++ or Python name): meaning and every context remedy."""
    import json

    from ..knowledge.explain import explain as explain_code

    try:
        info = explain_code(code, load_rules(rules_dirs))
    except DDTriageError as exc:
        fail(str(exc))
    if fmt == "json":
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    if "family" in info:
        click.echo(f"{info['family']} {info['code']}  {info['family_name']} ({info['level']})")
        click.echo(f"meaning:     {info['meaning']}")
        click.echo(f"action:      {info['action']}")
        click.echo(f"remedy:      {info['remedy']}")
        click.echo(f"note:        {info['note']}")
        return
    names = info["name"] or "unknown LLM-DataDist code"
    if info["python_name"] and info["python_name"] != info["name"]:
        names += f" (Python: {info['python_name']})"
    click.echo(f"{info['code']}  {info['decimal']}  {names}")
    click.echo(f"meaning:     {info['meaning']}")
    if info["plog_text"]:
        click.echo(f"plog text:   {info['plog_text']}")
    rec = {True: "yes", False: "no", None: "not stated"}[info["recoverable"]]
    click.echo(f"recoverable: {rec}")
    if info["solution"]:
        click.echo(f"official:    {info['solution']}")
    click.echo("remedies, most specific first:")
    for r in info["rules"]:
        click.echo(f"  - [{r['id']}] when {r['when']}: {r['action']}")
        click.echo(f"      {r['remedy']}")

