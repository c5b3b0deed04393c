"""`ddtriage mine`: the ERROR/WARNING lines nothing explains, clustered into ranked templates."""

from __future__ import annotations

import json
from datetime import datetime, tzinfo
from pathlib import Path

import click

from ..core.errors import DDTriageError
from .base import FiniteRange, cli, fail, load_rules, rules_option, warn
from .scan import _selection, reading_options, selection_options


@cli.command()
@click.argument("paths", nargs=-1)
@selection_options
@reading_options
@click.option("--top", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Templates listed (and drafted with --draft-rules).")
@click.option("--max-templates", type=click.IntRange(10, 1_000_000), default=1000, show_default=True,
              help="Templates held at once (memory bound): past it the least seen one is dropped.")
@click.option("--similarity", type=FiniteRange(0.1, 1.0), default=0.5, show_default=True,
              help="Share of equal tokens a line needs to join a template.")
@click.option("--draft-rules", "draft_dir", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Write DIR/neighbours.yaml: the families in effect plus one draft family per top template, "
                   "with its lines as examples (prove it with `ddtriage rules check DIR`).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="No warnings on stderr.")
@rules_option
def mine(paths: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...], hidden: bool,
         since: datetime | None, until: datetime | None, tz: tzinfo | None, year: int | None, max_bytes: int,
         max_ratio: float, follow: bool, node: str | None, top: int, max_templates: int, similarity: float,
         draft_dir: Path | None, fmt: str, quiet: bool, rules_dirs: tuple[Path, ...]) -> None:
    """Cluster the ERROR and WARNING lines of PATHS that no code, family or rule explains.

    Templates are ranked by count, spread over nodes and closeness in time to the incidents.
    With no PATHS, reads $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
    """
    from ..core.times import window_bound
    from ..inputs import Limits, default_paths
    from ..run.api import Options
    from ..run.mining import draft_id, write_drafts
    from ..run.mining import mine as mine_logs

    low, high = window_bound(since, tz), window_bound(until, tz)
    if low and high and low > high:
        fail("--since is later than --until")
    if "-" in paths:  # read twice (the incidents, then the lines): a pipe can be read once
        fail("mine cannot read standard input (-): it reads its inputs twice; save them to a file first")
    selection = _selection(include, exclude, hidden)
    try:
        rules = load_rules(rules_dirs)
        options = Options(limits=Limits(max_bytes=max_bytes, max_ratio=max_ratio), selection=selection,
                          since=since, until=until, year=year, tz=tz, node=node or None, follow=follow)
        result = mine_logs(list(paths) or default_paths(), rules=rules, options=options,
                           max_templates=max_templates, similarity=similarity)
        templates = result.top(top)
        drafted = write_drafts(draft_dir, templates, rules) if draft_dir else []
    except DDTriageError as exc:
        fail(str(exc))
    if not quiet:
        for skipped in result.stats.skipped:
            warn("warning", f"{skipped.source}: {skipped.reason}")
    if not result.stats.files:
        fail("nothing was read: no log file was found; check the paths and globs")
    if fmt == "json":
        click.echo(json.dumps({
            "lines": result.stats.lines, "taken": result.taken, "explained": result.explained,
            "incidents": result.incidents, "templates_dropped": result.miner.dropped,
            "templates": [{"id": draft_id(t), "template": t.text, "count": t.count, "level": t.level,
                           "nodes": sorted(t.nodes), "first": t.first, "last": t.last,
                           "seconds_to_incident": t.nearest, "score": round(t.score(), 3),
                           "examples": t.examples, "sources": [f"{s}:{n}" for s, n in t.sources],
                           "drafted": draft_id(t) in drafted} for t in templates],
        }, indent=2, ensure_ascii=False))
        return
    click.echo(f"{result.taken} unexplained ERROR/WARNING lines in {len(result.miner.templates())} templates "
               f"({result.explained} explained by a code, family or link fact; {result.incidents} incidents)")
    for rank, t in enumerate(templates, 1):
        near = "-" if t.nearest is None else _ago(t.nearest)
        click.echo(f"{rank:>3}. {t.count:>6}x  {len(t.nodes):>2} node(s)  {near:>8} from an incident  "
                   f"{t.level:<7} {t.text}")
        if t.sources:
            click.echo(f"       e.g. {t.sources[0][0]}:{t.sources[0][1]}")
    if draft_dir:
        click.echo(f"{len(drafted)} draft families written to {draft_dir / 'neighbours.yaml'}; "
                   f"check them with: ddtriage rules check {draft_dir}")


def _ago(gap: float) -> str:
    if gap < 1:
        return "0s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if gap >= size:
            return f"{gap / size:.0f}{unit}"
    return f"{gap:.0f}s"
