# Copyright 2025 Huawei Technologies Co., Ltd
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
# http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# Copied from component/ascend-faultdiag/src/ascend_fd/utils/tool.py (only what the checks use);
# safe_read_json and safe_write_open reduced to plain file access (modified).
import json
import string

CODE_WHITE_LIST = string.digits + string.ascii_letters + "-_"


def safe_read_json(path):
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def safe_write_open(path, mode="w+", encoding="utf-8"):
    return open(path, mode, encoding=encoding)


def chinese_check(char: str) -> bool:
    """
    Check whether the value is a Chinese character.
    [\u4e00, \u9fa5] is Chinese characters
    [\u3000, \u303f] or [\uff00, \uffef] is Chinese punctuation
    :param char: character
    :return: Chinese or not
    """
    if len(char) != 1:
        return False
    return '\u4e00' <= char <= '\u9fa5' or '\u3000' <= char <= '\u303f' or '\uff00' <= char <= '\uffef'


def white_check(check_str: str, white_list: str, allow_zh: bool = False):
    """
    White check for string
    :param check_str: the origin string
    :param white_list: white list str
    :param allow_zh: whether Chinese characters are supported
    :return: Check whether the check is passed
    """
    for char in check_str:
        if char not in white_list and not (allow_zh and chinese_check(char)):
            return False
    return True
