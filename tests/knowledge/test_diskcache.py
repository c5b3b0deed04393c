"""The disk cache of the rule tables (issue #17, start-up): parsed YAML and proven patterns are kept
across processes, only once valid, never fatal, and loading through it gives the same rules."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
from analyzer.core.errors import RuleError
from analyzer.knowledge import catalog, compiled, diskcache
from analyzer.knowledge.rules import RuleSet


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("DDTRIAGE_CACHE_DIR", str(where))
    monkeypatch.setattr(catalog, "_PARSED", {})  # as in a fresh process
    return where


def _parses(monkeypatch) -> list[int]:
    import yaml

    parses: list[int] = []
    real = yaml.load
    monkeypatch.setattr(yaml, "load", lambda *a, **k: parses.append(1) or real(*a, **k))
    return parses


def test_a_parsed_file_is_kept_for_the_next_process(cache, tmp_path, monkeypatch):
    parses = _parses(monkeypatch)
    path = tmp_path / "r.yaml"
    path.write_text("rules:\n  - id: a-rule\n    n: 1.5\n")
    assert catalog.read_yaml(path) == {"rules": [{"id": "a-rule", "n": 1.5}]} and parses == [1]
    assert [p.name.split("-")[0] for p in cache.iterdir()] == ["parsed"]
    monkeypatch.setattr(catalog, "_PARSED", {})  # the next process: no parse
    assert catalog.read_yaml(path) == {"rules": [{"id": "a-rule", "n": 1.5}]} and parses == [1]


@pytest.mark.parametrize("text, error", [
    ("a: &x [1]\nb: *x\n", "unsafe YAML: aliases"),
    ("a: !!python/object 1\n", "unsafe YAML: tags"),
    ("a: [1, 2\n", "invalid YAML"),
])
def test_what_fails_its_checks_is_never_kept(cache, tmp_path, text, error):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    for _ in range(2):  # the second time too: nothing was kept that would skip the checks
        with pytest.raises(RuleError, match=error):
            catalog.read_yaml(path)
        catalog._PARSED.clear()
    assert not cache.exists() or not list(cache.iterdir())


def test_not_utf8_is_refused_and_not_kept(cache, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(RuleError, match="not UTF-8"):
        catalog.read_yaml(path)
    assert not cache.exists()


def test_a_date_is_held_in_memory_only(cache, tmp_path):
    import datetime

    path = tmp_path / "d.yaml"
    path.write_text("when: 2025-11-12\n")
    first = catalog.read_yaml(path)
    assert first == {"when": datetime.date(2025, 11, 12)} and not cache.exists()
    first["when"] = None
    assert catalog.read_yaml(path) == {"when": datetime.date(2025, 11, 12)}


def test_a_damaged_entry_is_parsed_again(cache, tmp_path, monkeypatch):
    path = tmp_path / "r.yaml"
    path.write_text("a: 1\n")
    catalog.read_yaml(path)
    (entry,) = cache.iterdir()
    entry.write_bytes(b"\xff\x00 not marshal")
    catalog._PARSED.clear()
    parses = _parses(monkeypatch)
    assert catalog.read_yaml(path) == {"a": 1} and parses == [1]


def test_off_and_unwritable_caches_change_nothing(tmp_path, monkeypatch):
    path = tmp_path / "r.yaml"
    path.write_text("a: [1, 2]\n")
    monkeypatch.setenv("DDTRIAGE_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setenv("DDTRIAGE_NO_CACHE", "1")
    monkeypatch.setattr(catalog, "_PARSED", {})
    assert catalog.read_yaml(path) == {"a": [1, 2]} and not (tmp_path / "off").exists()
    assert diskcache.cache_dir() is None
    monkeypatch.delenv("DDTRIAGE_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DDTRIAGE_CACHE_DIR", str(blocker / "cache"))  # below a file: cannot be made
    catalog._PARSED.clear()
    assert catalog.read_yaml(path) == {"a": [1, 2]}


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.delenv("DDTRIAGE_NO_CACHE", raising=False)
    monkeypatch.delenv("DDTRIAGE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert diskcache.cache_dir() == tmp_path / "xdg" / "ddtriage"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert diskcache.cache_dir() == tmp_path / "home" / ".cache" / "ddtriage"
    monkeypatch.setenv("DDTRIAGE_NO_CACHE", "0")
    assert diskcache.cache_dir() == tmp_path / "home" / ".cache" / "ddtriage"


def _view(rules: RuleSet) -> list:
    """What a rule set holds, with every pattern as its text."""
    return [
        [(r.id, r.codes, r.apis, r.not_apis, r.nearby and r.nearby.pattern, r.remedy, r.examples_match)
         for r in rules.rules],
        [(k.id, k.literals, [p.pattern for p in k.patterns], k.values, k.match) for k in rules.linkfacts.kinds],
        [(p.id, p.literals, [q.pattern for q in p.patterns]) for p in rules.recovery.proofs],
        [(f.id, f.literals, f.pattern.pattern, f.codes) for f in rules.neighbours.families],
        rules.untranslated, rules.sources,
    ]


def test_rules_through_the_cache_are_the_rules_without_it(cache, monkeypatch):
    monkeypatch.setenv("DDTRIAGE_NO_CACHE", "1")
    plain = RuleSet.load()
    monkeypatch.delenv("DDTRIAGE_NO_CACHE")
    first = RuleSet.load()  # fills the cache: patterns compiled at load
    assert all(p._compiled is not None for k in first.linkfacts.kinds for p in k.patterns)
    catalog._PARSED.clear()
    again = RuleSet.load()  # from the cache: patterns compiled on first use
    assert all(p._compiled is None for k in again.linkfacts.kinds for p in k.patterns)
    assert _view(plain) == _view(first) == _view(again)
    assert {p.name.split("-")[0] for p in cache.iterdir()} == {"parsed", "proven"}
    line = "LinkLlmClusters remote ip info = 10.1.0.1:26000, cluster_id = 7"
    assert again.linkfacts.find_plainly(line) == plain.linkfacts.find_plainly(line) != []


def test_a_bad_pattern_is_an_error_at_load_every_time(cache, tmp_path):
    import shutil

    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    shutil.copy(catalog.BUILTIN_RULES_DIR / "linkfacts.yaml", rules_dir / "linkfacts.yaml")
    text = (rules_dir / "linkfacts.yaml").read_text()
    (rules_dir / "linkfacts.yaml").write_text(text.replace("patterns:\n", "patterns:\n      - '(unclosed'\n", 1))
    for _ in range(2):
        with pytest.raises(RuleError, match="invalid regular expression"):
            RuleSet.load([rules_dir])
        catalog._PARSED.clear()


def test_a_lazy_pattern_answers_and_pickles_as_the_compiled_one():
    import re

    import regex

    for engine, module in (("re", re), ("regex", regex)):
        lazy = compiled.LazyPattern(r"id=(?P<value>\d+)", engine)
        real = module.compile(r"id=(?P<value>\d+)")
        back = pickle.loads(pickle.dumps(lazy))
        assert back == lazy and back._compiled is None and hash(back) == hash(lazy)
        for p in (lazy, back):
            assert p.search("x id=12").group("value") == real.search("x id=12").group("value") == "12"
            assert p.match("id=3") and not p.fullmatch("id=3 ") and p.groupindex == real.groupindex
    assert compiled.LazyPattern("a", "regex").search("xa", timeout=1.0)
    with pytest.raises(Exception, match="missing"):
        compiled.pattern("(missing", "regex")


def test_proven_texts_are_keyed_by_all_of_them(cache):
    assert not compiled.proven(["a+", "b"])
    compiled.remember(["a+", "b"])
    assert compiled.proven(["a+", "b"]) and not compiled.proven(["a+"]) and not compiled.proven(["a+", "b"], "re")
    assert not compiled.proven([])


def test_the_cache_is_written_atomically_by_concurrent_processes(tmp_path):
    """Several processes filling one cache at once: every entry whole, every load the same."""
    code = ("from analyzer.knowledge.rules import RuleSet; r = RuleSet.load(); "
            "print(len(r.rules), len(r.linkfacts.kinds))")
    env = {**os.environ, "DDTRIAGE_CACHE_DIR": str(tmp_path / "shared")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = {p.communicate(timeout=120)[0] for p in procs}
    assert len(outs) == 1 and all(p.returncode == 0 for p in procs)
    assert not [p for p in (tmp_path / "shared").iterdir() if p.name.startswith(".")]  # no temporary left
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert {again.stdout} == outs
