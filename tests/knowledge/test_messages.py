"""Stage: knowledge (UI text). One table of messages in English and Chinese, looked up by one
function; the language from the locale as gettext reads it."""

from __future__ import annotations

import re

import pytest
from analyzer.knowledge.catalog import ACTIONS
from analyzer.knowledge.messages import action_label, check_messages, lang_from_env, language, noun, t


@pytest.mark.parametrize("env,lang", [
    ({"LANG": "zh_CN.UTF-8"}, "zh"),
    ({"LANG": "zh_TW.UTF-8"}, "zh"),
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({}, "en"),
    ({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),  # LC_ALL first
    ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),  # then LC_MESSAGES
    ({"LC_ALL": "", "LANG": "zh_CN.UTF-8"}, "zh"),  # an empty variable counts as unset
])
def test_language_from_the_locale(env, lang):
    assert lang_from_env(env) == lang


def test_every_message_has_both_languages_with_the_same_placeholders():
    assert check_messages() == []


def test_lookup_in_the_current_language():
    assert t("states_all_ongoing", n=2) == "2, all ongoing, most severe first"
    with language("zh"):
        assert t("incidents_title", states=t("states_all_ongoing", n=2)) == "事件：2 个，均未恢复，最严重的在前"
        assert noun(3, "finding") == "3 条发现"
        assert action_label("relink") == "重新建链"
    assert noun(1, "finding") == "1 finding" and noun(2, "finding") == "2 findings"
    assert t("incidents_title", "zh", states="1 个") == "事件：1 个"


def test_every_action_has_words_in_both_languages():
    for action in ACTIONS:
        for lang in ("en", "zh"):
            assert action_label(action, lang) != "", action
        assert re.search(r"[\u4e00-\u9fff]", action_label(action, "zh")), action
