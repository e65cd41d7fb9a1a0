"""The parser's (Click's) usage errors in Chinese, for the common kinds: matched loosely, by their gist.

Click words its messages its own way and may reword them in a release: each kind here is found by a few
words it must hold (``no such option``), and its names (the option, the argument, the value) are carried
over as Click gave them. A message of a kind not listed stays as Click wrote it.
"""

from __future__ import annotations

import re

_NAME = r"(?P<name>['\"]?[^'\"\s]+?['\"]?)"  # an option, argument or command name, quoted or not

CLICK_VALUE_KINDS = {"integer": "整数", "float": "数", "boolean": "布尔值", "choice": "选项", "integer range": "整数",
                     "float range": "数", "int range": "整数", "int": "整数"}


def _value(rest: str) -> str:
    """What is wrong with an option's value: one of Click's checks in Chinese, else as given (our own callbacks'
    messages are written in the run's language already: message ids)."""
    kinds = "|".join(sorted(CLICK_VALUE_KINDS, key=len, reverse=True))
    for pattern, chinese in (
        (rf"(?P<value>.*?) is not an? valid (?P<kind>{kinds})\.?", "{value} 不是有效的{kind}"),
        (r"(?P<value>.*?) is not one of (?P<choices>.*?)\.?", "{value} 不是 {choices} 之一"),
        (r"(?P<value>.*?) is not in the range (?P<range>.*?)\.?", "{value} 不在 {range} 范围内"),
        (r"(?P<value>.*?) is not a valid (?P<kind>.*?)\.?", "{value} 无效"),
    ):
        match = re.fullmatch(pattern, rest, re.I | re.S)
        if match:
            fields = match.groupdict()
            fields["kind"] = CLICK_VALUE_KINDS.get((fields.get("kind") or "").lower(), "")
            return chinese.format(**fields)
    return rest


def usage(message: str) -> str | None:
    """Click's usage error ``message`` in Chinese, or None when it is not of a kind listed here."""
    text = " ".join(message.split()).rstrip(".")
    close = re.search(r"did you mean (.+?)\??\)?$", text, re.I)
    hint = f"（是不是 {close.group(1)}？）" if close else ""
    possible = re.search(r"\(possible options: (.+?)\)", text, re.I)
    hint = hint or (f"（可能是：{possible.group(1)}）" if possible else "")
    kinds = (
        (rf"no such option:? {_NAME}(?:[ .(].*)?", "没有选项 {name}" + hint),
        (rf"no such command:? {_NAME}(?:[ .(].*)?", "没有命令 {name}" + hint),
        (rf"missing argument:? {_NAME}", "缺少参数 {name}"),
        (rf"missing option:? {_NAME}", "缺少选项 {name}"),
        (rf"option {_NAME} requires an argument", "选项 {name} 需要一个值"),
        (rf"option {_NAME} requires \d+ arguments", "选项 {name} 需要更多的值"),
        (rf"option {_NAME} does not take a value", "选项 {name} 不接受值"),
        (r"got unexpected extra arguments? \((?P<name>.*)\)", "多余的参数（{name}）"),
    )
    for pattern, chinese in kinds:
        match = re.fullmatch(pattern, text, re.I | re.S)
        if match:
            return chinese.format(name=match.group("name"))
    value = re.fullmatch(r"invalid value for (?P<name>.+?): (?P<rest>.*)", text, re.I | re.S)
    if value:
        return f"{value.group('name')} 的值无效：{_value(value.group('rest'))}"
    return None
