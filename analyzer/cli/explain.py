"""`ddtriage explain CODE`: a code's meaning and every context remedy."""

from __future__ import annotations

from pathlib import Path

import click

from ..core.errors import DDTriageError
from .base import cli, fail, lang_option, load_rules, rules_option


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("code")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@lang_option
@rules_option
def explain(code: str, fmt: str, lang: str | None, rules_dirs: tuple[Path, ...]) -> None:
    """Explain CODE (hex, decimal, C++ or Python name): meaning and every context remedy."""
    import json

    from ..knowledge.explain import explain as explain_code
    from ..knowledge.messages import language

    try:
        rules = load_rules(rules_dirs, lang)
        info = explain_code(code, rules)
    except DDTriageError as exc:
        fail(str(exc))
    if fmt == "json":
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    with language(rules.lang):
        _show(info)


def _show(info: dict) -> None:
    """`explain`'s text: the code, its meaning, the documentation's words and every remedy."""
    from ..knowledge.messages import t

    if "family" in info:
        click.echo(f"{info['family']} {info['code']}  {info['family_name']} ({info['level']})")
        click.echo(t("explain_meaning") + info["meaning"])
        click.echo(t("explain_action") + _action(info["action"]))
        click.echo(t("explain_remedy") + info["remedy"])
        click.echo(t("explain_note") + info["note"])
        return
    names = info["name"] or t("explain_unknown_name")
    if info["python_name"] and info["python_name"] != info["name"]:
        names += t("explain_python", name=info["python_name"])
    click.echo(f"{info['code']}  {info['decimal']}  {names}")
    click.echo(t("explain_meaning") + info["meaning"])
    if info["plog_text"]:
        click.echo(t("explain_plog") + info["plog_text"])
    click.echo(t("explain_recoverable") + _yes_no(info["recoverable"]))
    if info.get("since"):
        click.echo(t("explain_since", version=info["since"]))
    if info["solution"]:
        click.echo(t("explain_official") + info["solution"])
    if info.get("docs"):
        click.echo(t("explain_docs"))
        for doc in info["docs"]:
            click.echo(t("explain_doc", binding=_BINDING[doc["binding"]], recoverable=_yes_no(doc["recoverable"]),
                         says=doc["says"]))
        if info.get("docs_follow"):
            click.echo(t("explain_docs_follow", binding=_BINDING[info["docs_follow"]]))
    click.echo(t("explain_remedies"))
    for r in info["rules"]:
        click.echo(t("explain_rule", id=r["id"], when=r["when"], action=_action(r["action"])))
        click.echo(f"      {r['remedy']}")
        if r.get("follows"):
            click.echo(t("explain_follows", binding=_BINDING[r["follows"]]))


_BINDING = {"cpp": "C++", "python": "Python"}


def _action(action: str) -> str:
    """`relink` in English; `重新建链 (relink)` in Chinese: the id stays."""
    from ..knowledge.messages import action_label, current

    return action if current() == "en" else f"{action_label(action)} ({action})"


def _yes_no(value: bool | None) -> str:
    from ..knowledge.messages import t

    return t({True: "word_yes", False: "word_no", None: "not_stated"}[value])

