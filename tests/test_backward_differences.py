"""Every gradient a result holds against central differences of its own forward pass, without torch
(tests/backward_differences.py): each stage alone, every pair of stages, random mixes, latent attention and Q, K, V
given directly.  (Against torch.autograd on a forward written apart: tests/test_backward_torch.py.)"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from backward_differences import Oracle
from backward_reference import FEATURES, direct_document, document
from test_latent import D_MODEL
from test_latent import document as latent_document

from attncli.core.gradient_keys import GRADIENT_KEYS

PAIRS = list(itertools.combinations(FEATURES, 2))
MIXES = [frozenset(random.Random(seed).sample(FEATURES, random.Random(seed + 2000).randint(3, 10)))
         for seed in range(16)]
LATENT = {"plain": {}, "no_q_lora": {"q_lora": False}, "clip": {"clip_qkv": 1.5}, "pre_norm": {"pre_norm": {
    "kind": "layer"}}, "residual": {"residual": {"scale": 0.7}},
    "temperature": {"query_temperature": {"floor_scale": 2, "attn_scale": 0.5}},
    "context": {"context": np.random.default_rng(5).normal(size=(4, D_MODEL)).tolist(), "mask": "none"}}
DIRECT = [frozenset(s) for s in ({"causal"}, {"clip", "rope", "qk_norm"}, {"sinks", "temperature", "gqa"},
                                 {"context", "softcap", "alibi"}, {"window", "bias_matrix", "qk_norm", "rope"})]


def latent(name: str, seed: int = 3) -> dict:
    doc = latent_document(seed, n=5, **LATENT[name])
    doc["gradient"] = np.random.default_rng(seed).normal(size=(5, D_MODEL))
    return doc


def checked(doc: dict, seed: int, directions: int = 2) -> set[str]:
    """The document's gradient keys, each along ``directions`` random directions; the keys checked."""
    oracle = Oracle(doc, seed)
    bad = oracle.failures(directions)
    assert not bad, {key: [(round(mine, 9), round(theirs, 9)) for mine, theirs, _ in found]
                     for key, found in bad.items()}
    assert set(oracle.trace.gradients) <= set(GRADIENT_KEYS)
    return set(oracle.trace.gradients)


@pytest.mark.parametrize("feature", FEATURES)
def test_each_stage_alone(feature):
    found = checked(document({feature}, 0), 0)
    assert {"grad_queries", "grad_keys", "grad_values", "grad_inputs", "grad_weights", "delta",
            "grad_weight_query", "grad_weight_output"} <= found


@pytest.mark.parametrize("features", MIXES, ids=["+".join(sorted(f)) for f in MIXES])
def test_random_mixes(features):
    checked(document(set(features), len(features)), len(features))


@pytest.mark.parametrize("name", LATENT)
def test_latent_attention(name):
    found = checked(latent(name), 1)
    assert {"grad_latent_kv", "grad_weight_kv_up", "grad_weight_kv_down", "grad_latent_kv_norm_gamma"} <= found


@pytest.mark.parametrize("flat", [False, True], ids=["per_head", "flat"])
@pytest.mark.parametrize("features", DIRECT, ids=["+".join(sorted(f)) for f in DIRECT])
def test_qkv_given_directly(features, flat):
    found = checked(direct_document(set(features), len(features), flat), 2)
    assert "grad_inputs" not in found and {"grad_queries", "grad_keys", "grad_values"} <= found


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_every_pair_of_stages(pair):
    checked(document(set(pair), hash(pair) % 1000), 4, directions=1)


def test_every_gradient_key_is_checked_somewhere():
    """Across documents with nearly everything (the norms' kinds drawn: β with layer), latent attention with and
    without c_Q: central differences reach every key the contract lists."""
    seen = set()
    for seed in (0, 2, 7, 8):  # add_norm, context, post_norm (layer); each norm's kind layer in one of them
        extra = ({"add_norm"}, {"residual", "post_norm"}, {"context"})[seed % 3]
        base = set(FEATURES) - {"add_norm", "residual", "post_norm", "context"} | extra
        seen |= checked(document(base, seed), seed, directions=1)
    seen |= checked(latent("plain"), 0, directions=1) | checked(latent("no_q_lora"), 0, directions=1)
    no_document = {"grad_bias_query_up", "grad_bias_kv_up"}  # the contract's: latent attention has these biases none
    differential = {key for key in GRADIENT_KEYS if "differential" in key or key == "grad_normalized_head_outputs"}
    assert set(GRADIENT_KEYS) - seen == no_document | differential  # (differential: tests/test_differential.py)


def test_the_oracle_sees_a_wrong_gradient():
    """The comparison fails when one cell of one gradient is off by a part in a thousand of the array's size."""
    oracle = Oracle(document({"sinks", "add_norm"}, 0), 0)
    assert not oracle.failures()
    for key in ("grad_sinks", "grad_add_norm_gamma", "grad_scores"):
        oracle = Oracle(document({"sinks", "add_norm"}, 0), 0)
        g = oracle.trace.gradients[key]
        g.flat[1] += 1e-3 * np.abs(g).max()
        assert key in oracle.failures(directions=3), key
