"""Config: defaults for `ddtriage scan` from `.ddtriage.toml` or `[tool.ddtriage]` in pyproject.toml.

Stage: cli (set-up). Found from the current directory upwards: in each folder a
`.ddtriage.toml` first, then a `pyproject.toml` that has a `[tool.ddtriage]` table (one without it
is passed over, as ruff and pytest do). The nearest wins; command-line flags win over it. Paths
in it (rules, baseline, suppressions, outputs) are relative to the file's folder.

    [tool.ddtriage]
    fail-on = "unrecoverable"
    rules = ["ci/ddtriage-rules"]
    baseline = "ci/ddtriage-baseline.json"
    suppressions = "ci/ddtriage-suppressions.yaml"
    exclude = ["**/tmp/**"]
    outputs = ["ddtriage.sarif", "gitlab:gl-code-quality-report.json"]
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DDTriageError

LOCAL_NAME = ".ddtriage.toml"


class ConfigError(DDTriageError):
    """A config file that cannot be used: the message names the file, the key and the reason."""


@dataclass(frozen=True)
class Key:
    """One config key: the `scan` parameter it sets and the kind of value it takes."""

    param: str
    kind: str  # str | bool | int | strs | path | paths | outputs
    choices: tuple[str, ...] = ()


# What `--fail-on` (and `fail-on` here) takes, for every command that gates: findings or related
# errors, any finding, unrecoverable ones, ongoing ones (not recovered), or never.
FAIL_ON = ("related", "any", "unrecoverable", "ongoing", "never")

KEYS: dict[str, Key] = {
    "fail-on": Key("fail_on", "str", FAIL_ON),
    "format": Key("fmt", "str"),
    "outputs": Key("outputs", "outputs"),
    "rules": Key("rules_dirs", "paths"),
    "baseline": Key("baseline", "path"),
    "suppressions": Key("suppressions", "path"),
    "include": Key("include", "strs"),
    "exclude": Key("exclude", "strs"),
    "hidden": Key("hidden", "bool"),
    "allow-empty": Key("allow_empty", "bool"),
    "strict": Key("strict", "bool"),
    "jobs": Key("jobs", "int"),
    "tz": Key("tz", "str"),  # the zone of zone-less stamps, as --tz
    "lang": Key("lang", "str", ("en", "zh")),  # the language of reports and explain, as --lang
}


@dataclass(frozen=True)
class Config:
    """The settings a config file gives, by config key, and where it was found."""

    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def scan_defaults(self) -> dict[str, Any]:
        """The values as click's `default_map` for the scan command (parameter names)."""
        return {KEYS[k].param: v for k, v in self.values.items()}


def find_config(start: Path | None = None) -> Path | None:
    """The nearest `.ddtriage.toml`, or `pyproject.toml` with `[tool.ddtriage]`, from `start` up."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        local = folder / LOCAL_NAME
        if local.is_file():
            return local
        project = folder / "pyproject.toml"
        if project.is_file() and _has_table(project):
            return project
    return None


def _has_table(path: Path) -> bool:
    # someone else's broken pyproject (unreadable, not TOML): not ours to report unless it names us
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "ddtriage" not in text and "\\" not in text:  # nor an escape that could spell it: not parsed
        return False
    import tomllib

    try:
        return "ddtriage" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return False


def load_config(path: Path | None) -> Config:
    """Read and check a config file (None: no config)."""
    if path is None:
        return Config()
    import tomllib

    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = doc.get("tool", {}).get("ddtriage") if path.name == "pyproject.toml" else doc
    where = f"{path}: [tool.ddtriage]" if path.name == "pyproject.toml" else str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table of settings")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s): {', '.join(unknown)} (known: {', '.join(KEYS)})")
    return Config(path, {k: _value(where, k, KEYS[k], v, path.parent) for k, v in table.items()})


def _value(where: str, name: str, key: Key, raw: Any, base: Path) -> Any:
    def bad(what: str) -> ConfigError:
        return ConfigError(f"{where}: {name}: must be {what}, got {raw!r}")

    if key.kind == "bool":
        if not isinstance(raw, bool):
            raise bad("true or false")
        return raw
    if key.kind == "int":
        if not isinstance(raw, int) or isinstance(raw, bool) or raw < 1:
            raise bad("a whole number of at least 1")
        return raw
    if key.kind in ("str", "path"):
        if not isinstance(raw, str) or not raw:
            raise bad("a string")
        choices = key.choices or (_formats() if name == "format" else ())
        if choices and raw not in choices:
            raise bad("one of " + ", ".join(choices))
        if name == "tz":  # told here, naming the file, not later as if --tz had been given
            from ..core.times import parse_tz

            try:
                parse_tz(raw)
            except ValueError as exc:
                raise ConfigError(f"{where}: {name}: {exc}") from None
        return _relative(base, raw) if key.kind == "path" else raw
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise bad("a list of strings")
    if key.kind == "paths":
        return [_relative(base, x) for x in raw]
    if key.kind == "outputs":
        return [_output(base, x) for x in raw]
    return list(raw)


def _formats() -> tuple[str, ...]:
    from ..writers import WRITERS

    return tuple(sorted(WRITERS))


def _relative(base: Path, raw: str) -> str:
    """A path from the config, as a name relative to the current folder when it is below it."""
    path = Path(raw) if os.path.isabs(raw) else base / raw
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)


def _output(base: Path, raw: str) -> str:
    """`[FORMAT:]FILE` with FILE made relative to the config's folder (`-` stays stdout)."""
    from ..writers import WRITERS

    prefix, sep, rest = raw.partition(":")
    if sep and prefix in WRITERS and rest:
        return f"{prefix}:{rest if rest == '-' else _relative(base, rest)}"
    return raw if raw == "-" else _relative(base, raw)
