"""The extracted document as YAML text: a commented header, the tokens, the inputs' file, then the family's keys.

>>> print(render({"heads": 2, "weights": {"query": {"file": "m.safetensors", "tensor": "q", "layout": "torch"}},
...               "mask": "causal", "rope": {"base": 10000.0, "style": "half"}}, ["<s>", "hi"], "l0.npy", (2, 8),
...              "hi", "m: llama, layer 0 of 0–1, 2 tokens, float64", [("weights", 1.2e-17)], "layer 0"))
# attncli extract  m: llama, layer 0 of 0–1, 2 tokens, float64
# text: "hi"
# Computed from this document, the layer agrees with the model to (max |difference|):
#   weights 1.2e-17
tokens: [<s>, hi]
inputs: l0.npy   # X, 2 × 8: the hidden states entering layer 0
heads: 2
weights:
  query: {file: m.safetensors, tensor: q, layout: torch}
mask: causal
rope: {base: 10000.0, style: half}
<BLANKLINE>
"""

from __future__ import annotations

import json
import re
from typing import Any

from attncli.outputs.yamltext import yaml_scalar

ORDER = ("linear", "heads", "kv_heads", "weights", "bias", "scale", "softcap", "mask", "score_bias", "pre_norm",
         "clip_qkv", "qk_norm", "rope", "latent", "query_temperature", "sinks", "post_norm", "residual", "add_norm",
         "k_eq_v", "v_norm", "differential")
ORDER += ("indexer",)  # DeepSeek-V3.2's lightning indexer, after the attention's own keys
WIDTH = 100  # of a line of tokens


def render(keys: dict[str, Any], tokens: list[str], inputs: str, shape: tuple[int, ...], text: str, summary: str,
           agreement: list[tuple[str, float]], where: str) -> str:
    lines = [f"# attncli extract  {_comment(summary)}", f"# text: {_comment(_shortened(text))}"]
    if agreement:
        lines.append("# Computed from this document, the layer agrees with the model to (max |difference|):")
        lines.append("#   " + ", ".join(f"{key} {difference:.1e}" for key, difference in agreement))
    lines += _tokens(tokens)
    lines.append(f"inputs: {yaml_scalar(inputs)}   # X, {shape[0]} × {shape[1]}: the hidden states entering {where}")
    for key in ORDER:
        if key in keys:
            lines += _entry(key, keys[key])
    return "\n".join(lines) + "\n"


def _entry(key: str, value: Any) -> list[str]:
    if key == "linear":  # (docs/format.md Part 4: one level deeper, its weights and norm each a block)
        return [f"{key}:"] + ["  " + line for k, v in value.items() for line in _entry(k, v)]
    if isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()):
        return [f"{key}:"] + [f"  {k}: {flow(v)}" for k, v in value.items()]
    return [f"{key}: {flow(value)}"]


def _tokens(tokens: list[str]) -> list[str]:
    """``tokens: [...]`` over as many lines as it takes, none much wider than WIDTH."""
    lines, line = [], "tokens: ["
    for i, token in enumerate(tokens):
        item = yaml_scalar(token) + ("]" if i == len(tokens) - 1 else ",")
        if len(line) + len(item) > WIDTH and not line.endswith("["):
            lines.append(line)
            line = "  "
        line += item if line.endswith(("[", "  ")) else " " + item
    return lines + [line]


def flow(value: Any) -> str:
    """A value in YAML's flow style."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return yaml_scalar(value)


def _comment(text: str) -> str:
    """Text on one comment line: control characters (a newline too) escaped."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: f"\\x{ord(m.group()):02x}", text)


def _shortened(text: str, limit: int = 200) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted if len(quoted) <= limit else quoted[:limit] + f"… ({len(text)} characters)"
