"""The one YAML writer (attncli.outputs.yamltext), used by init's and extract's documents: read back by attncli's own
reader, every token is the same string and every number the same float (a token `.5` once came back as 0.5)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncli.inputs.document import parse_text
from attncli.models.render import render
from attncli.outputs.yamltext import yaml_scalar, yaml_string

TRICKY = [".5", ".inf", "-.inf", ".NaN", "1e3", "0x1F", "0o17", "1_000", "+1", "yes", "No", "ON", "~", "null", "NULL",
          "True", "", " a", "a ", "a b", "#x", "x #y", "x: y", "a,b", "[x]", "{x}", "-", "- x", "?", "&a", "*a", "!t",
          "|", ">", "'q'", '"q"', "%", "@", "`", "<s>", "##ing", "Ġthe", "▁the", "我想吃酸菜鱼", "\x85", "\x7f", "\t",
          "a\nb", "\u2028", " \u2028", "a \u2029b", "é", "\\", "inf", "nan", "-0"]


def read_back(value_text: str):
    return parse_text(f"tokens: [{value_text}]\ninputs: [[1]]\n", "doc.yaml")["tokens"][0]


@pytest.mark.parametrize("token", TRICKY)
def test_every_tricky_token_reads_back_as_itself(token):
    assert read_back(yaml_string(token)) == token


@pytest.mark.slow  # a property suite
@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=12))
def test_any_text_reads_back_as_itself(token):
    assert read_back(yaml_string(token)) == token


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.floats(allow_nan=False) | st.integers(-(10**15), 10**15))
def test_any_number_reads_back_as_the_same_number(x):
    assert read_back(yaml_scalar(x)) == x


def test_infinities_and_nan_are_written_as_yaml_writes_them():
    assert [read_back(yaml_scalar(x)) for x in (math.inf, -math.inf)] == [math.inf, -math.inf]
    assert math.isnan(read_back(yaml_scalar(math.nan)))


def test_extracts_document_keeps_every_token():
    text = render({"heads": 1}, TRICKY, "x.npy", (len(TRICKY), 4), "t", "m", [], "layer 0")
    data = parse_text(text, "l.yaml")
    assert data["tokens"] == TRICKY and data["inputs"] == "x.npy"
