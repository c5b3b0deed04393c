"""`ddtriage config`: the settings `ddtriage scan` would use here, and where each one came from."""

from __future__ import annotations

import json
from typing import Any

import click

from .base import cli
from .settings import KEYS, Config


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False)  # TOML-compatible for strings, lists, bools, ints


def _engine() -> str:
    """Which engine scans here (issue #17) and what chose it."""
    import os

    from ..scan.blocks import engine_name

    chosen = (os.environ.get("DDTRIAGE_ENGINE") or "auto").strip().lower()
    return f"{engine_name()} (DDTRIAGE_ENGINE={chosen})"


@cli.command("config")
@click.pass_context
def config_command(ctx: click.Context) -> None:
    """Print the effective scan settings and where each came from (config file or default).
    Flags given to `ddtriage scan` win over both."""
    config: Config = ctx.obj or Config()
    scan = cli.get_command(ctx, "scan")
    assert scan is not None
    defaults = {p.name: p.default for p in scan.params}
    if config.path is None:
        click.echo("# no config file: no .ddtriage.toml or pyproject.toml [tool.ddtriage] here or above")
    else:
        table = " [tool.ddtriage]" if config.path.name == "pyproject.toml" else ""
        click.echo(f"# config: {config.path}{table}")
    click.echo(f"# engine: {_engine()}")
    width = max(len(k) for k in KEYS)
    for name, key in KEYS.items():
        if name in config.values:
            value, origin = config.values[name], f"from {config.path}"
        else:
            value, origin = defaults.get(key.param), "default"
            if not isinstance(value, (str, int, float, list, tuple)):  # click's "no default" marker
                value = [] if key.kind in ("paths", "strs", "outputs") else False if key.kind == "bool" else None
        text = "(unset)" if value is None else _shown(value)
        click.echo(f"{name:<{width}} = {text:<40} # {origin}")
