"""Tiny models of every family attncli extract knows, built here (never downloaded), and the model's own numbers.

Each model is made from a config with random weights (N(0, 0.3²), so that attention is peaked and mistakes
show), saved with ``save_pretrained(..., safe_serialization=True)`` beside a tokenizer trained on a few
sentences with the ``tokenizers`` library: WordPiece for BERT and DistilBERT, byte-level BPE for RoBERTa,
GPT-2, Llama, Mistral, Qwen2 and BLOOM, Unigram for T5.

:func:`reference` runs a model as a user would (``output_attentions``, ``output_hidden_states``, a hook on the
attention's output projection), in float64, with Hugging Face's float32 steps switched back to float64 by
replacing the classes' methods (softmax, RMSNorm, the rotary embedding, BLOOM's ALiBi slopes): independently
of how ``attncli.models.capture`` does it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def offline_transformers():
    """(torch, transformers) with the Hugging Face Hub switched off (nothing is ever downloaded), or the test is
    skipped when they are not installed."""
    import pytest

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    torch = pytest.importorskip("torch", minversion="2.5")
    return torch, pytest.importorskip("transformers", minversion="5.23")


def hf_and_tokenizers():
    """(torch, transformers) for the extract tests (a module-scoped fixture of each), skipped without tokenizers."""
    import pytest

    torch, transformers = offline_transformers()
    pytest.importorskip("tokenizers")
    return torch, transformers


def odd_models(torch, transformers, root: Path) -> dict[str, Path]:
    """A Llama saved in bfloat16 and a GPT-2 in shards of 8 KB, below ``root``: checkpoints read another way."""
    return {"llama-bf16": build(torch, transformers, "llama", root / "llama-bf16", dtype=torch.bfloat16),
            "gpt2-sharded": build(torch, transformers, "gpt2", root / "gpt2-sharded", max_shard_size="8KB")}


def close(ours, theirs, what: str, tol: float) -> float:
    """|ours − theirs| at most ``tol`` of the larger of 1 and theirs' largest number; the difference."""
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    difference = float(np.max(np.abs(ours - theirs)))
    assert difference <= tol * max(1.0, float(np.max(np.abs(theirs)))), (what, difference)
    return difference


CORPUS = ["The animal didn't cross the street because it was too tired.",
          "Attention is all you need, said the paper; the street was quiet."] * 3
TEXT = "The animal didn't cross the street"
FAMILIES = ("bert", "roberta", "distilbert", "gpt2", "llama", "mistral", "qwen2", "t5", "bloom")
OUTPUT = {  # the attention's output projection of layer L (its output is Y)
    "bert": "encoder.layer.{L}.attention.output.dense", "roberta": "encoder.layer.{L}.attention.output.dense",
    "distilbert": "transformer.layer.{L}.attention.out_lin", "gpt2": "h.{L}.attn.c_proj",
    "llama": "layers.{L}.self_attn.o_proj", "mistral": "layers.{L}.self_attn.o_proj",
    "qwen2": "layers.{L}.self_attn.o_proj", "t5": "{S}.block.{L}.layer.0.SelfAttention.o",
    "bloom": "h.{L}.self_attention.dense",
}
ADD_NORM = {"bert": "encoder.layer.{L}.attention.output.LayerNorm",
            "roberta": "encoder.layer.{L}.attention.output.LayerNorm",
            "distilbert": "transformer.layer.{L}.sa_layer_norm"}


def tokenizer(transformers, family: str):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if family in ("bert", "distilbert"):
        words = " ".join(CORPUS).lower()
        for mark in ".,;'":
            words = words.replace(mark, f" {mark} ")
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(words.split()))]
        tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                           special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
        return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]",
                                                    sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")
    if family == "t5":
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer, tok.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
        tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=80,
                                                                special_tokens=["<pad>", "</s>", "<unk>"],
                                                                unk_token="<unk>"))
        tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
        return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="</s>",
                                                    pad_token="<pad>")
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300,
                                                        special_tokens=["<pad>", "<unk>", "<s>", "</s>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    around = {"roberta": ("<s>", "</s>"), "llama": ("<s>", None), "mistral": ("<s>", None)}.get(family, (None, None))
    single = " ".join(part for part in (around[0], "$A", around[1]) if part)
    tok.post_processor = processors.TemplateProcessing(
        single=single, special_tokens=[(s, tok.token_to_id(s)) for s in around if s])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                                eos_token="</s>", pad_token="<pad>")


def config(transformers, family: str, vocab: int):
    """A two-layer model (T5: a three-layer decoder) of width 16, in its config class and its class with a head."""
    small = {"vocab_size": vocab}
    return {
        "bert": (transformers.BertConfig(**small, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=32, max_position_embeddings=24), "BertForMaskedLM"),
        "roberta": (transformers.RobertaConfig(**small, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                               intermediate_size=32, max_position_embeddings=26, pad_token_id=0),
                    "RobertaForMaskedLM"),
        "distilbert": (transformers.DistilBertConfig(**small, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                                     max_position_embeddings=24), "DistilBertForMaskedLM"),
        "gpt2": (transformers.GPT2Config(**small, n_embd=16, n_layer=2, n_head=2, n_positions=24), "GPT2LMHeadModel"),
        "llama": (transformers.LlamaConfig(**small, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                           num_key_value_heads=2, intermediate_size=32, max_position_embeddings=24,
                                           attention_bias=True), "LlamaForCausalLM"),
        "mistral": (transformers.MistralConfig(**small, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                               num_key_value_heads=2, intermediate_size=32, max_position_embeddings=24,
                                               sliding_window=3), "MistralForCausalLM"),
        "qwen2": (transformers.Qwen2Config(**small, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                           num_key_value_heads=1, intermediate_size=32, max_position_embeddings=24,
                                           rope_parameters={"rope_type": "linear", "rope_theta": 1000.0,
                                                            "factor": 2.0}),
                  "Qwen2ForCausalLM"),
        "t5": (transformers.T5Config(**small, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_decoder_layers=3,
                                     num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                                     decoder_start_token_id=0), "T5ForConditionalGeneration"),
        "bloom": (transformers.BloomConfig(**small, hidden_size=16, n_layer=2, n_head=4), "BloomForCausalLM"),
    }[family]


def build(torch, transformers, family: str, folder: Path, dtype=None, **save) -> Path:
    """The tiny model of ``family`` with random weights, saved with its tokenizer into ``folder``."""
    tok = tokenizer(transformers, family)
    cfg, head = config(transformers, family, len(tok))
    return save_random(torch, getattr(transformers, head)(cfg), tok, family, folder, dtype, **save)


def built(torch, transformers, configs: dict, tok, root: Path) -> dict[str, Path]:
    """Each config of ``configs`` (name -> a transformers config) as a random model saved with ``tok`` into
    ``root / name``: name -> its folder."""
    return {name: save_random(torch, transformers.AutoModel.from_config(config), tok, name, root / name)
            for name, config in configs.items()}


def save_random(torch, model, tok, name: str, folder: Path, dtype=None, **save) -> Path:
    """``model`` with random weights N(0, 0.3²), seeded by ``name``, saved with ``tok`` into ``folder``."""
    generator = torch.Generator().manual_seed(sum(map(ord, name)))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    if dtype is not None:
        model = model.to(dtype)
    model.save_pretrained(folder, safe_serialization=True, **save)
    tok.save_pretrained(folder)
    return folder


def reference(torch, transformers, family: str, folder: Path, layer: int, monkeypatch, stack: str = "encoder",
              text: str = TEXT) -> dict[str, np.ndarray]:
    """The model's own X (hidden state), A (output_attentions), Y (output projection) and N (Add & Norm)."""
    f64 = torch.float64
    softmax = torch.nn.functional.softmax
    monkeypatch.setattr(torch.nn.functional, "softmax",
                        lambda x, dim=None, _stacklevel=3, dtype=None: softmax(x, dim=dim))
    kind = "AutoModel" if family != "t5" else ("T5Model" if stack == "decoder" else "T5EncoderModel")
    model = getattr(transformers, kind).from_pretrained(folder, dtype=f64, attn_implementation="eager").eval()
    for module in model.modules():
        if hasattr(module, "variance_epsilon"):  # RMSNorm (Llama, Mistral, Qwen2, T5) in float64
            monkeypatch.setattr(type(module), "forward", lambda self, x: self.weight * x * torch.rsqrt(
                x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))
        if hasattr(module, "inv_freq"):  # RoPE's cos and sin in float64, from float64 frequencies
            theta = model.config.rope_parameters["rope_theta"]
            d = 2 * module.inv_freq.shape[0]
            exact = 1.0 / theta ** (torch.arange(0, d, 2, dtype=f64) / d)
            if module.rope_type != "default":
                exact = module.inv_freq.to(f64)

            def rope(self, x, position_ids, exact=exact):
                angles = position_ids.to(f64)[..., None] * exact
                emb = torch.cat((angles, angles), dim=-1)
                return emb.cos(), emb.sin()

            monkeypatch.setattr(type(module), "forward", rope)
    if family == "bloom":
        bloom = __import__("transformers.models.bloom.modeling_bloom", fromlist=["x"])
        h = model.config.n_head
        assert h & (h - 1) == 0  # (the slopes of a power of two)
        monkeypatch.setattr(bloom, "_get_alibi_slopes",
                            lambda heads, device: 2.0 ** (-8.0 * torch.arange(1, heads + 1, dtype=f64) / heads))
    caught = {}

    def keeping(key: str):
        def hook(module, args, output) -> None:  # (returning something would replace the output)
            caught.setdefault(key, output)
        return hook

    model.get_submodule(OUTPUT[family].format(L=layer, S=stack)).register_forward_hook(keeping("output"))
    if family in ADD_NORM:
        model.get_submodule(ADD_NORM[family].format(L=layer)).register_forward_hook(keeping("normalized"))
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    ids = tok(text, return_tensors="pt")["input_ids"]
    inputs = {"input_ids": ids}
    if stack == "decoder":
        inputs["decoder_input_ids"] = torch.cat([torch.zeros_like(ids[:, :1]), ids[:, :-1]], dim=1)
    with torch.no_grad():
        out = model(**inputs, output_attentions=True, output_hidden_states=True)
    prefix = "decoder_" if stack == "decoder" else ""
    found = {"inputs": getattr(out, f"{prefix}hidden_states")[layer],
             "weights": getattr(out, f"{prefix}attentions")[layer], **caught}
    return {key: value[0].double().numpy() for key, value in found.items()}


def weights(model, family: str, layer: int, stack: str = "encoder") -> dict[str, np.ndarray]:
    """W_Q, W_K, W_V, W_O of the layer as d_in × d_out, in the test's own words."""
    def t(name: str) -> np.ndarray:
        return model.get_parameter(name.format(L=layer, S=stack)).detach().double().numpy().T

    if family in ("bert", "roberta"):
        p = "encoder.layer.{L}.attention."
        return {k: t(p + n + ".weight") for k, n in zip(("query", "key", "value", "output"),
                                                          ("self.query", "self.key", "self.value", "output.dense"))}
    if family == "distilbert":
        return {k: t(f"transformer.layer.{{L}}.attention.{n}_lin.weight") for k, n in
                zip(("query", "key", "value", "output"), ("q", "k", "v", "out"))}
    if family == "gpt2":
        fused = t("h.{L}.attn.c_attn.weight").T  # Conv1D: already d_in × d_out
        return dict(zip(("query", "key", "value"), np.split(fused, 3, axis=1)), output=t("h.{L}.attn.c_proj.weight").T)
    if family in ("llama", "mistral", "qwen2"):
        return {k: t(f"layers.{{L}}.self_attn.{k[0]}_proj.weight") for k in ("query", "key", "value", "output")}
    if family == "t5":
        return {k: t(f"{{S}}.block.{{L}}.layer.0.SelfAttention.{k[0]}.weight")
                for k in ("query", "key", "value", "output")}
    h = model.config.n_head
    fused = t("h.{L}.self_attention.query_key_value.weight").T  # (h·3·hd, d): per head q, k, v rows
    per = fused.reshape(h, 3, -1, fused.shape[1])
    return {**{k: per[:, i].reshape(-1, fused.shape[1]).T for i, k in enumerate(("query", "key", "value"))},
            "output": t("h.{L}.self_attention.dense.weight")}
