"""Gemma 4's attention (``v_norm``, ``k_eq_v``, scale 1) against Hugging Face's own ``Gemma4TextAttention``.

A tiny Gemma4TextConfig with random weights (never a download), its sliding layer and its global layer (V from the
raw k_proj output, proportional rope with a quarter of the pairs turned) run in float64 with HF's own sliding
mask, and compared with the attncli document of the same numbers to 1e-12 relative: the output, V̂, and with
``gradient`` every gradient against torch.autograd.  ``Tensor.float()`` and the softmax are kept float64 during
the call (Gemma 4's RMSNorm and its eager softmax cast to float32 even in a float64 model); the cos and sin are
given in float64.  Without torch, V̂
is checked against a loop.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attncli
from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed

N, HIDDEN, HEADS, W = 6, 16, 4, 3


@pytest.mark.torch  # (called by the torch tests only: torch imported here)
def gemma4(layer: int, seed: int):
    """(the config, Gemma4TextAttention of layer ``layer`` (0: sliding, 1: global, k = v), in float64)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from hf_modules import randomize
    from transformers.models.gemma4 import modeling_gemma4 as g4
    cfg = transformers.Gemma4TextConfig(
        vocab_size=16, hidden_size=HIDDEN, intermediate_size=32, num_hidden_layers=2, num_attention_heads=HEADS,
        num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1, attention_k_eq_v=True,
        layer_types=["sliding_attention", "full_attention"], sliding_window=W, hidden_size_per_layer_input=0)
    cfg._attn_implementation = "eager"
    return cfg, randomize(g4.Gemma4TextAttention(cfg, layer), seed, std=0.5)


def frequencies(head_dim: int, layer: int) -> np.ndarray:
    """The inverse frequencies: default rope (θ = 10⁴) on the sliding layer, proportional (θ = 10⁶, a quarter of the
    pairs turned, the rest 0) on the global one, as Hugging Face derives them, in float64."""
    if layer == 0:
        return 10_000.0 ** (-np.arange(0, head_dim, 2) / head_dim)
    turned = int(0.25 * head_dim // 2)
    return np.concatenate([1_000_000.0 ** (-np.arange(0, 2 * turned, 2) / head_dim), np.zeros(head_dim // 2 - turned)])


def run_hf(attn, x, f, layer: int, grad=None):
    """The module's output (n, d_model) on x (n, d_model), with float64 cos and sin and HF's own mask; with ``grad``
    the gradients of Σ grad ⊙ output (input, the projections, the norms' γ) by torch.autograd."""
    import torch
    from hf_modules import hf_mask
    from transformers import masking_utils as masking

    fn = masking.sliding_window_causal_mask_function(W) if layer == 0 else None
    mask, _ = hf_mask(N, N, fn)
    angles = torch.arange(N, dtype=torch.float64)[:, None] * torch.as_tensor(f)[None, :]
    emb = torch.cat([angles, angles], dim=-1)[None]  # (1, n, d): rotate_half's layout
    xt = torch.tensor(x[None], requires_grad=grad is not None)
    original, softmax = torch.Tensor.float, torch.nn.functional.softmax
    torch.Tensor.float = lambda self, *a, **k: self if self.dtype == torch.float64 else original(self, *a, **k)
    torch.nn.functional.softmax = lambda t, dim=None, dtype=None, **k: softmax(t, dim=dim)  # its float32 softmax
    try:
        out, _ = attn(xt, (emb.cos(), emb.sin()), mask, {})
    finally:
        torch.Tensor.float, torch.nn.functional.softmax = original, softmax
    if grad is None:
        return out[0].detach().numpy(), None
    (out[0] * torch.tensor(grad)).sum().backward()
    grads = {"inputs": xt.grad[0].numpy(), **{name: p.grad.numpy() for name, p in attn.named_parameters()}}
    return out[0].detach().numpy(), grads


def document(cfg, attn, x, f, layer: int) -> dict:
    from hf_modules import T

    doc = {"inputs": x.tolist(), "heads": HEADS, "kv_heads": attn.k_proj.out_features // attn.head_dim,
           "weights": {"query": T(attn.q_proj).tolist(), "key": T(attn.k_proj).tolist(),
                       "output": T(attn.o_proj).tolist()},
           "scale": "none", "rope": {"frequencies": f.tolist()}, "v_norm": {"eps": cfg.rms_norm_eps},
           "qk_norm": {"kind": "rms", "eps": cfg.rms_norm_eps, "gamma": {"query": attn.q_norm.weight.tolist(),
                                                                         "key": attn.k_norm.weight.tolist()}},
           "mask": {"causal": True, "window": W} if layer == 0 else "causal"}
    if attn.v_proj is None:
        doc["k_eq_v"] = True
    else:
        doc["weights"]["value"] = T(attn.v_proj).tolist()
    return doc


def close(a, b, rtol=1e-12):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())


@pytest.mark.torch
@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("seed", range(3))
def test_gemma4s_attention_equals_hugging_faces_in_float64(layer, seed):
    cfg, attn = gemma4(layer, seed)
    assert (attn.v_proj is None) == (layer == 1) and attn.scaling == 1.0
    x = np.random.default_rng(seed).normal(size=(N, HIDDEN))
    f = frequencies(attn.head_dim, layer)
    want, _ = run_hf(attn, x, f, layer)
    doc = document(cfg, attn, x, f, layer)
    trace = attncli.compute(doc)
    close(trace.output, want)
    streamed = attend_streamed(attncli.load(doc), threads=2)
    close(streamed.output, want)


@pytest.mark.torch
@pytest.mark.parametrize("layer", [0, 1])
def test_gemma4s_gradients_equal_torch_autograd(layer):
    cfg, attn = gemma4(layer, 7)
    rng = np.random.default_rng(7)
    x, seed = rng.normal(size=(N, HIDDEN)), rng.normal(size=(N, HIDDEN))
    f = frequencies(attn.head_dim, layer)
    _, grads = run_hf(attn, x, f, layer, grad=seed)
    trace = attncli.compute(dict(document(cfg, attn, x, f, layer), gradient=seed.tolist()))
    close(trace.grad_inputs, grads["inputs"])
    close(trace.grad_weight_query, grads["q_proj.weight"].T)
    close(trace.grad_weight_key, grads["k_proj.weight"].T)  # with k_eq_v: both paths of C·W_K
    close(trace.grad_weight_output, grads["o_proj.weight"].T)
    close(trace.grad_qk_norm_gamma_query, grads["q_norm.weight"])
    close(trace.grad_qk_norm_gamma_key, grads["k_norm.weight"])
    if layer == 0:
        close(trace.grad_weight_value, grads["v_proj.weight"].T)
    else:
        assert trace.grad_weight_value is None
    streamed = attend_streamed(attncli.load(dict(document(cfg, attn, x, f, layer), gradient=seed.tolist())))
    close(streamed.gradients["grad_weight_key"], trace.grad_weight_key)


def loop_document(seed: int = 0, k_eq_v: bool = True) -> dict:
    rng = np.random.default_rng(seed)
    doc = {"inputs": rng.normal(size=(4, 5)).tolist(), "heads": 2, "kv_heads": 1, "scale": "none",
           "weights": {"query": rng.normal(size=(5, 6)).tolist(), "key": rng.normal(size=(5, 3)).tolist()},
           "bias": {"key": rng.normal(size=3).tolist()}, "v_norm": True, "mask": "causal"}
    if k_eq_v:
        doc["k_eq_v"] = True
    else:
        doc["weights"]["value"] = rng.normal(size=(5, 3)).tolist()
    return doc


def test_v_norm_and_k_eq_v_equal_a_loop():
    doc = loop_document()
    trace = attend(attncli.load(doc))
    x, wk, bk = np.array(doc["inputs"]), np.array(doc["weights"]["key"]), np.array(doc["bias"]["key"])
    for j in range(4):
        v = [sum(x[j, r] * wk[r, c] for r in range(5)) + bk[c] for c in range(3)]  # V = K's projection
        rms = math.sqrt(sum(t * t for t in v) / 3 + 1e-6)
        close(trace.values[0, j], np.array(v))
        close(trace.normalized_values[0, j], np.array([t / rms for t in v]))
    close(trace.head_outputs, trace.weights @ trace.normalized_values[0])  # A·V̂
    assert trace.spec.scale == 1.0


def test_the_json_has_the_normalised_values_and_no_value_weight(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(dict(loop_document(), gradient={"random": "normal", "seed": 1})))
    out = json.loads(runner.invoke(app, ["compute", str(path), "--format", "json"]).stdout)
    keys = list(out)
    assert keys.index("values") < keys.index("normalized_values") < keys.index("scores")
    assert out["values"] == out["keys"]
    assert "grad_normalized_values" in out and "grad_weight_value" not in out
    assert keys.index("grad_normalized_values") < keys.index("grad_values")
    result = runner.invoke(app, ["compute", str(path), "--only", "Vhat"])
    assert result.exit_code == 0 and "V̂ = V / √(mean(V²) + 1e-06)" in result.stdout


@pytest.mark.parametrize(("extra", "where"), [
    ({"weights": {"value": [[1.0, 0, 0]] * 5}}, "k_eq_v"),
    ({"bias": {"value": [1.0, 0, 0]}}, "k_eq_v"),
    ({"k_eq_v": "yes"}, "k_eq_v"),
    ({"v_norm": {"eps": 0}}, "v_norm.eps"),
    ({"v_norm": {"gamma": [1, 2]}}, "v_norm"),
])
def test_bad_gemma4_keys_are_one_line_and_exit_2(runner, tmp_path, extra, where):
    doc = loop_document()
    for key, value in extra.items():
        doc[key] = {**doc[key], **value} if isinstance(value, dict) and isinstance(doc.get(key), dict) else value
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: {where}"), result.stderr


@pytest.mark.torch  # (called by the torch tests only: torch imported here)
def stack(seed: int):
    """Four of Gemma 4's attention modules (sliding, global, sliding, global) whose last two reuse the K and V of the
    first two (config num_kv_shared_layers: 2: layers 0 and 1 "store", 2 and 3 "reuse", by layer type)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from hf_modules import randomize
    from transformers.models.gemma4 import modeling_gemma4 as g4
    cfg = transformers.Gemma4TextConfig(
        vocab_size=16, hidden_size=HIDDEN, intermediate_size=32, num_hidden_layers=4, num_attention_heads=HEADS,
        num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1, attention_k_eq_v=True,
        layer_types=["sliding_attention", "full_attention"] * 2, sliding_window=W, num_kv_shared_layers=2,
        hidden_size_per_layer_input=0)
    cfg._attn_implementation = "eager"
    assert cfg.kv_sharing_modes == ["store", "store", "reuse", "reuse"]
    return cfg, [randomize(g4.Gemma4TextAttention(cfg, i), seed + i, std=0.5) for i in range(4)]


@pytest.mark.torch
def test_a_layer_reusing_an_earlier_layers_keys_and_values_equals_hugging_faces():
    cfg, layers = stack(3)  # (skips without torch and transformers)
    import torch
    from hf_modules import hf_mask
    from transformers import masking_utils as masking

    assert layers[2].is_kv_shared_layer and not hasattr(layers[2], "k_proj") and layers[3].is_kv_shared_layer
    x = np.random.default_rng(3).normal(size=(N, HIDDEN))
    shared, hidden, docs = {}, torch.tensor(x[None]), []
    original, softmax = torch.Tensor.float, torch.nn.functional.softmax
    torch.Tensor.float = lambda self, *a, **k: self if self.dtype == torch.float64 else original(self, *a, **k)
    torch.nn.functional.softmax = lambda t, dim=None, dtype=None, **k: softmax(t, dim=dim)
    try:
        for i, attn in enumerate(layers):
            kind = 0 if attn.is_sliding else 1
            f = frequencies(attn.head_dim, kind)
            mask, _ = hf_mask(N, N, masking.sliding_window_causal_mask_function(W) if kind == 0 else None)
            angles = torch.arange(N, dtype=torch.float64)[:, None] * torch.as_tensor(f)[None, :]
            emb = torch.cat([angles, angles], dim=-1)[None]
            with torch.no_grad():
                hidden, _ = attn(hidden, (emb.cos(), emb.sin()), mask, shared)
            if attn.is_kv_shared_layer:
                docs.append({"heads": HEADS, "scale": "none", "rope": {"frequencies": f.tolist()}, "kv_from": i - 2,
                             "weights": {"query": attn.q_proj.weight.detach().numpy().T.tolist(),
                                         "output": attn.o_proj.weight.detach().numpy().T.tolist()},
                             "qk_norm": {"kind": "rms", "eps": cfg.rms_norm_eps,
                                         "gamma": {"query": attn.q_norm.weight.tolist()}},
                             "mask": {"causal": True, "window": W} if kind == 0 else "causal"})
            else:
                doc = document(cfg, attn, x, f, kind)
                doc.pop("inputs")
                docs.append(doc)
    finally:
        torch.Tensor.float, torch.nn.functional.softmax = original, softmax
    trace = attncli.compute({"inputs": x.tolist(), "layers": docs})
    close(trace.output, hidden[0].numpy())
    for first, last in ((trace[0], trace[2]), (trace[1], trace[3])):
        assert np.array_equal(last.keys, first.kernel_keys) and np.array_equal(last.values, first.normalized_values)
        assert last.keys_rotated is None and last.normalized_keys is None and last.queries_rotated is not None


@pytest.mark.parametrize(("layer", "message"), [
    ({"kv_from": 1}, "layers[1].kv_from: 1 is not an earlier layer"),
    ({"kv_from": 0, "v_norm": True}, "leave out v_norm"),
    ({"kv_from": 0, "weights": {"key": [[1.0, 0.0]] * 2}}, "leave out weights.key"),
])
def test_bad_kv_sharing_is_one_line_and_exit_2(runner, tmp_path, layer, message):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"inputs": [[1, 0], [0, 1]], "layers": [{"mask": "causal"}, layer]}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr


def test_kv_from_outside_a_stack_is_refused(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"inputs": [[1, 0], [0, 1]], "kv_from": 0}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and "kv_from: takes an earlier layer's keys and values" in result.stderr


def _json(runner, *args):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


SHARED = ("examples", "stacked", "gemma4_shared_kv.yaml")


def test_explain_writes_a_shared_layer_with_the_earlier_layers_keys_and_its_own_queries_turned(runner):
    """kv_from: step 2 shows W_Q alone, step 3 each key and value as layer 1's (the numbers layer 1's scores saw and
    its weights mixed), steps qk_norm and rope the queries only, and step 4's scores are this layer's turned
    queries against layer 1's keys (numpy on compute's arrays)."""
    from conftest import ROOT

    path = str(ROOT.joinpath(*SHARED))
    first = _json(runner, "compute", path, "--layer", "1", "--only", "kernel_keys", "--only", "normalized_values",
                  "--format", "json")
    second = _json(runner, "compute", path, "--layer", "2", "--only", "queries_rotated", "--only", "scores",
                   "--format", "json")
    k, v = np.array(first["kernel_keys"][0]), np.array(first["normalized_values"][0])  # (m, d): one K/V head
    weights = _json(runner, "explain", path, "--layer", "2", "--step", "2", "--format", "json")
    assert list(weights["numbers"]) == ["w_q"] and weights["formula"] == "W_Q"
    assert "kv_from: 0 takes those of layer 1" in " ".join(weights["text"])
    step3 = _json(runner, "explain", path, "--layer", "2", "--step", "3", "--format", "json")
    np.testing.assert_allclose(step3["numbers"]["keys"]["values"], k, rtol=1e-12)
    np.testing.assert_allclose(step3["numbers"]["values"]["values"], v, rtol=1e-12)
    assert "cat: k₂ = layer 1's k₂ = [" in step3["lines"][3] and "W_K" not in " ".join(step3["lines"])
    for name, absent in (("qk_norm", "normalized_keys"), ("rope", "keys_rotated")):
        extra = _json(runner, "explain", path, "--layer", "2", "--step", name, "--format", "json")
        assert absent not in extra["numbers"] and "the keys are layer 1's (kv_from: 0)" in " ".join(extra["text"])
    rope = _json(runner, "explain", path, "--layer", "2", "--step", "rope", "--format", "json")
    assert rope["formula"].startswith("Q′ = rope(Q):") and not any(line.startswith("the: k") for line in rope["lines"])
    scores = _json(runner, "explain", path, "--layer", "2", "--step", "4", "--query", "2", "--format", "json")
    q = np.array(second["queries_rotated"][0][1])  # head 1, query 2 ("cat")
    for j, line in enumerate(scores["lines"][:2]):
        assert line.split(" = ")[-1].split()[0] == f"{q @ k[j]:.4f}"
    np.testing.assert_allclose(second["scores"][0][1], k @ q, rtol=1e-12)
    chinese = _json(runner, "explain", path, "--layer", "2", "--step", "3", "--lang", "zh", "--format", "json")
    assert "第 1 层的 k₂" in chinese["lines"][3]


def test_page_and_check_take_a_shared_layer(runner, tmp_path):
    """The page of a kv_from layer is written; check names the mask left out of its weights and points to explain
    with --layer."""
    import yaml
    from conftest import ROOT

    out = tmp_path / "page.html"
    result = runner.invoke(app, ["page", str(ROOT.joinpath(*SHARED)), "--layer", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "layer 1&#x27;s k₂" in out.read_text() or "layer 1's k₂" in out.read_text()
    doc = yaml.safe_load(ROOT.joinpath(*SHARED).read_text())
    second = _json(runner, "compute", str(ROOT.joinpath(*SHARED)), "--layer", "2", "--only", "scores",
                   "--format", "json")
    s = np.array(second["scores"][0][1])
    e = np.exp(s - s.max())
    doc["layers"][1]["answer"] = {"query": 2, "weights": [round(float(x), 4) for x in e / e.sum()]}  # unmasked
    path = tmp_path / "homework.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = runner.invoke(app, ["check", str(path), "--layer", "2"], env={"COLUMNS": "400"})
    assert result.exit_code == 1 and "Traceback" not in result.output
    said = " ".join(result.stdout.split())
    assert "the mask was left out" in said and f"attncli explain {path} --layer 2 --step 5 --query 2" in said


@pytest.mark.parametrize("lang, words", [("en", "the values were not normalised"), ("zh", "漏掉了对值的归一化")])
def test_check_names_v_norm_left_out_from_the_output(runner, tmp_path, lang, words):
    """A learner who forgot v_norm: the output of the same document without it (computed as a document of its
    own), rounded to 3 decimals; check names the stage's declared variant."""
    import yaml
    from conftest import ROOT

    doc = yaml.safe_load((ROOT / "examples" / "gemma4" / "global_layer.yaml").read_text())
    plain = {key: value for key, value in doc.items() if key != "v_norm"}
    doc["answer"] = {"output": np.round(attncli.compute(plain).output, 3).tolist()}
    path = tmp_path / "homework.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = runner.invoke(app, ["check", str(path), "--lang", lang], env={"COLUMNS": "200"})
    assert result.exit_code == 1 and words in result.stdout, result.stdout


@pytest.mark.parametrize(("heads", "shared"), [(2, "shared by heads 1 and 2"), (4, "shared by heads 1 to 4")])
def test_explain_step_3_with_v_equal_to_k_names_no_w_v(runner, tmp_path, heads, shared):
    """examples/gemma4/global_layer.yaml (k_eq_v, one key/value head): step 3 never multiplies by a W_V it then says
    is not there, and the query heads sharing K/V head 1 are "1 and 2" (two) or "1 to 4" (more)."""
    from conftest import EXAMPLES

    text = (EXAMPLES / "gemma4" / "global_layer.yaml").read_text(encoding="utf-8")
    if heads == 4:
        text = text.replace("heads: 2", "heads: 4").replace("[8, 16]", "[8, 32]").replace("[16, 8]", "[32, 8]")
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8")
    en = " ".join(runner.invoke(app, ["explain", str(path), "--step", "3"]).stdout.split())
    assert "There is no W_V" in en and "row × W_V" not in en and "three matrices" not in en
    assert "that same key projection is also its value" in en and shared in en
    zh = "".join(runner.invoke(app, ["explain", str(path), "--step", "3", "--lang", "zh"]).stdout.split())
    assert "这里没有W_V" in zh and "乘W_V得到值" not in zh and "这个键投影同时也就是它的值" in zh
    assert ("由第1和第2个头共用" if heads == 2 else "由第1到第4个头共用") in zh


def test_explain_step_2_with_v_equal_to_k_shows_and_names_no_w_v(runner):
    """V = K (k_eq_v): step 2's formula, its paragraphs and its tables have W_Q and W_K only, as step 3 says; the
    one key/value head's shared weights are W_K (step 8 too)."""
    from conftest import EXAMPLES

    path = str(EXAMPLES / "gemma4" / "global_layer.yaml")
    step = json.loads(runner.invoke(app, ["explain", path, "--step", "2", "--format", "json"]).stdout)
    text = " ".join(step["text"])
    assert step["formula"] == "W_Q, W_K (V = K)" and sorted(step["numbers"]) == ["w_k", "w_q"]
    assert "There is no W_V" in text and "share the one W_K, so head 1" in text and "W_K and W_V" not in text
    last = " ".join(json.loads(runner.invoke(app, ["explain", path, "--step", "8", "--format", "json"]).stdout)["text"])
    assert "its own W_Q and the one W_K they all share (a single key/value head)" in last
    zh = json.loads(runner.invoke(app, ["explain", path, "--step", "2", "--format", "json", "--lang", "zh"]).stdout)
    zh_text = "".join(zh["text"])
    assert "这里没有 W_V" in zh_text and "共用同一份 W_K，" in zh_text and "W_V 得到值" not in zh_text



def test_a_shared_layers_formulas_of_k_and_v_are_chinese_under_lang_zh(runner):
    """kv_from's K and V formulas (explain's step 3 line, compute's titles) have no English words in Chinese."""
    from conftest import ROOT

    path = str(ROOT.joinpath(*SHARED))
    step = _json(runner, "explain", path, "--layer", "2", "--step", "3", "--lang", "zh", "--format", "json")
    assert "取自 kv_from 所指的层" in step["formula"] and "of the layer" not in step["formula"], step["formula"]
    english = _json(runner, "explain", path, "--layer", "2", "--step", "3", "--format", "json")
    assert "K = K_kernel of the layer kv_from names" in english["formula"]
    tables = runner.invoke(app, ["compute", path, "--layer", "2", "--only", "keys", "--only", "values", "--lang", "zh"],
                           env={"COLUMNS": "200"})
    assert tables.exit_code == 0 and "of the layer" not in tables.stdout
    assert "V = V（有 v_norm 时为 V̂）" in tables.stdout
