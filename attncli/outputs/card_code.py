"""The code lines of the conventions card, library by library (see :mod:`attncli.outputs.card`).

Every function takes the document's :class:`~attncli.outputs.card.Facts` and returns an
:class:`~attncli.outputs.card.Entry`.  The setup's names, used by every torch line: ``q`` (1, h, n, d_k), ``k``
(1, g, m, d_k), ``v`` (1, g, m, d_v), ``n``, ``m``, ``i`` (n, 1) and ``j`` (1, m) the query and key indices,
``allowed`` (h or 1, n, m; True = may attend) when the document masks, ``bias`` (h, n, m) when it has a score bias,
``KEYS``, ``ALLOWED``, ``BIAS``, ``SLOPES``, ``SINKS`` the document's arrays, ``scale``.
"""

from __future__ import annotations

from attncli.outputs.card_facts import Entry, Facts, keys_literal, number

FLOAT = "dtype=torch.float64"


def _masks(f: Facts) -> bool:
    return f.causal is not None or f.window is not None or f.chunk is not None or f.keys is not None or f.matrix


def terms(f: Facts, qi: str, kj: str, head: str) -> list[str]:
    """The mask's parts as boolean expressions of the query index ``qi`` and the key index ``kj`` (all must hold)."""
    if f.matrix:  # the document's matrix (or a −inf bias cell): ALLOWED holds every part
        return [f"ALLOWED[{head}, {qi}, {kj}]"]
    ip = f"({qi} + {f.offset})" if f.offset else qi  # i′
    parts = []
    if f.causal is not None:
        parts.append(f"({kj} <= {ip})")
        if f.window is not None:
            parts.append(f"({kj} > {ip} - {f.window})")
    elif f.window is not None:
        parts.append(f"(({qi} - {kj}).abs() < {f.window})")
    if f.chunk is not None:
        parts.append(f"({kj} // {f.chunk} == {ip} // {f.chunk})")
    if f.keys is not None:
        parts.append(f"KEYS[{kj}]")
    return parts


def setup(f: Facts) -> list[str]:
    lines = ["import numpy as np", "import torch", "",
             'a = np.load("kernel.npz")  # written by the attncli compute command above',
             'q = torch.from_numpy(a["kernel_queries"])[None]  # (1, h, n, d_k): batch, heads, rows, dims',
             'k = torch.from_numpy(a["kernel_keys"])[None]  # (1, g, m, d_k)',
             'v = torch.from_numpy(a["values"])[None]  # (1, g, m, d_v)',
             f"n, m, scale = q.shape[2], k.shape[2], {number(f.scale)}",
             "i, j = torch.arange(n)[:, None], torch.arange(m)[None, :]  # query and key indices"]
    if f.keys is not None:
        lines.append(f"KEYS = torch.tensor({keys_literal(f.keys)})  # key padding: True = a real key")
    if f.matrix:
        lines.append('ALLOWED = torch.from_numpy(np.isfinite(a["scaled_scores"]))  # (h, n, m) every mask part')
    if _masks(f):
        parts = terms(f, "i", "j", ":")
        both = parts[0] if len(parts) == 1 else f"({' & '.join(parts)})"
        lines.append(f"allowed = {both}" + "[None]" * (not f.matrix) + "  # (1 or h, n, m): True = may attend")
    if f.slopes is not None:
        lines.append(f"SLOPES = torch.tensor({f.slopes}, {FLOAT})  # ALiBi: B = slope_h · (j − i)")
        lines.append("bias = SLOPES[:, None, None] * (j - i)  # (h, n, m)")
    elif f.bias_from_file:
        lines.append('bias = torch.from_numpy(np.nan_to_num(a["score_bias"], nan=0.0, neginf=0.0))  # (h, n, m) B')
    if f.sinks is not None:
        lines.append(f"SINKS = torch.tensor({f.sinks}, {FLOAT})  # one logit per query head")
    return lines


def _lse_sinks(lse: str, log2: bool = False, heads_axis: str = "[None, :, None]") -> list[str]:
    """The sinks applied after a kernel that returns lse: o·σ(lse − s_h), lse ← ln(e^lse + e^s_h)."""
    ln = f"{lse} * math.log(2)" if log2 else lse
    return [f"sinks = SINKS{heads_axis}  # a sink is one more term of the softmax's denominator",
            f"out = out * torch.sigmoid({ln} - sinks)[..., None]",
            f"{lse} = torch.logaddexp({ln}, sinks)" + ("  # now a natural log" if log2 else "")]


def sdpa(f: Facts) -> Entry:
    args: dict = {"scale": f.scale, "enable_gqa": f.h != f.g}
    if f.softcap is not None:
        return Entry("sdpa", "PyTorch SDPA", [], args, None, None, missing=[("no_softcap", {"alt": "FlexAttention"})])
    only_causal = f.causal == "upper_left" and not (f.window or f.chunk or f.keys is not None or f.matrix)
    lines = ["import torch.nn.functional as F", ""]
    mask = None
    if f.bias or f.sinks is not None or (_masks(f) and not only_causal):
        base = "bias" if f.bias else "torch.zeros(n, m, dtype=torch.float64)"
        mask = f"torch.where(allowed, {base}, -torch.inf)" if _masks(f) else base
        if not f.bias and f.sinks is None:
            mask = "allowed"  # a boolean mask: True = may attend
    if f.sinks is not None:  # one more key of zeros, whose score is the sink's logit
        lines += ["zero = lambda x: x.new_zeros(*x.shape[:2], 1, x.shape[3])",
                  "k, v = torch.cat([k, zero(k)], dim=2), torch.cat([v, zero(v)], dim=2)",
                  f"mask = torch.cat([{mask}.expand({f.h}, n, m), SINKS[:, None, None].expand({f.h}, n, 1)], dim=-1)"]
        mask = "mask"
    call = "out = F.scaled_dot_product_attention(q, k, v"
    if mask is not None:
        call += f", attn_mask={mask}"
        args["attn_mask"] = "float" if f.bias or f.sinks is not None else "bool"
    elif only_causal:
        call += ", is_causal=True"
        args["is_causal"] = True
    call += ", scale=scale" + (", enable_gqa=True" if f.h != f.g else "") + ")  # (1, h, n, d_v)"
    notes = [("sdpa_empty", {})] if f.empty and f.sinks is None else []
    if f.causal == "lower_right":
        notes.append(("sdpa_lower_right", {}))
    return Entry("sdpa", "PyTorch SDPA", lines + [call], args, None, None, notes=notes)


def flex(f: Facts) -> Entry:
    lines = ["import math"] * (f.sinks is not None) + [
        "from torch.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention", ""]
    score = []
    if f.softcap is not None:
        score.append(f"    score = {number(f.softcap)} * torch.tanh(score / {number(f.softcap)})")
    if f.slopes is not None:
        score.append("    score = score + SLOPES[h] * (kv_idx - q_idx)")
    elif f.bias_from_file:
        score.append("    score = score + bias[h, q_idx, kv_idx]")
    if score:
        lines += ["def score_mod(score, b, h, q_idx, kv_idx):  # score = scale · q·k, as FlexAttention passes it",
                  *score, "    return score", ""]
    if _masks(f):
        lines += ["def mask_mod(b, h, q_idx, kv_idx):  # True = may attend",
                  f"    return {' & '.join(terms(f, 'q_idx', 'kv_idx', 'h'))}", "",
                  f"block_mask = create_block_mask(mask_mod, None, {f.h if f.per_head_matrix else None}, n, m, "
                  "device=q.device)"]
    call = "out, aux = flex_attention(q, k, v" + (", score_mod=score_mod" if score else "") + \
        (", block_mask=block_mask" if _masks(f) else "") + ", scale=scale" + \
        (", enable_gqa=True" if f.h != f.g else "") + ", return_aux=AuxRequest(lse=True))"
    lines += [call, "lse = aux.lse  # (1, h, n), natural log"]
    if f.sinks is not None:
        lines += _lse_sinks("lse")
    args = {"scale": f.scale, "enable_gqa": f.h != f.g, "score_mod": bool(score), "mask_mod": _masks(f)}
    return Entry("flex", "FlexAttention", lines, args, "e", "(b, h, n)")


def _bottom_right_ok(f: Facts) -> bool:
    """Whether a kernel that aligns the causal diagonal bottom-right (j ≤ i + m − n) reads this causal mask."""
    return f.causal == "lower_right" or f.n == f.m


def flash(f: Facts) -> Entry:
    missing = _common_missing(f, "flash")
    if f.causal is not None and not _bottom_right_ok(f):
        missing.append(("top_left", {"n": f.n, "m": f.m}))
    if f.causal is None and f.window is not None and f.n != f.m:
        missing.append(("window_offset", {}))
    if f.bias_from_file:
        missing.append(("no_bias", {}))
    elif f.slopes is not None and not (f.causal is not None and f.n == f.m):
        missing.append(("flash_alibi", {}))
    window = [-1, -1]
    if f.window is not None:
        window = [f.window - 1, 0 if f.causal is not None else f.window - 1]
    args = {"softmax_scale": f.scale, "causal": f.causal is not None, "window_size": window,
            "softcap": f.softcap or 0.0, "alibi_slopes": f.slopes}
    if missing:
        return Entry("flash", "FlashAttention", [], args, "e", "(b, h, n)", missing=missing)
    call = "out, lse, _ = flash_attn_func(*(x.transpose(1, 2) for x in (q, k, v)), softmax_scale=scale"
    call += ", causal=True" * (f.causal is not None)
    call += f", window_size=({window[0]}, {window[1]})" * (f.window is not None)
    call += f", softcap={number(f.softcap)}" if f.softcap is not None else ""
    call += ", alibi_slopes=SLOPES.float()" * (f.slopes is not None)
    lines = ["import math"] * (f.sinks is not None) + [
        "from flash_attn import flash_attn_func  # (b, n, h, d), fp16 or bf16 on a GPU", "",
        "q, k, v = (x.cuda().bfloat16() for x in (q, k, v))", call + ", return_attn_probs=True)",
        "out = out.transpose(1, 2)  # (b, h, n, d_v); lse (b, h, n), natural log"]
    if f.sinks is not None:
        lines += _lse_sinks("lse")
    return Entry("flash", "FlashAttention", lines, args, "e", "(b, h, n)", notes=[("bf16", {})])


def _common_missing(f: Facts, lib: str) -> list[tuple[str, dict]]:
    """What FlashAttention and FlashInfer cannot be told: a chunk, key padding, a matrix (FlashAttention)."""
    missing = []
    if lib == "flash":
        if f.chunk is not None:
            missing.append(("no_chunk", {}))
        if f.keys is not None:
            missing.append(("flash_keys", {}))
        if f.matrix:
            missing.append(("no_matrix", {}))
    return missing


def flashinfer(f: Facts) -> Entry:
    custom = f.matrix or f.chunk is not None or f.keys is not None or (
        f.causal is not None and not _bottom_right_ok(f)) or (f.causal is None and f.window is not None)
    missing = []
    if f.bias:
        missing.append(("flashinfer_bias", {}))
    if custom and f.per_head_matrix:
        missing.append(("per_head", {}))
    args = {"sm_scale": f.scale, "causal": f.causal is not None and not custom,
            "window_left": f.window - 1 if f.window is not None and not custom else -1,
            "logits_soft_cap": f.softcap or 0.0, "custom_mask": custom}
    if missing:
        return Entry("flashinfer", "FlashInfer", [], args, "2", "(n, h)", missing=missing)
    call = "out, lse = flashinfer.single_prefill_with_kv_cache(*(x[0].transpose(0, 1) for x in (q, k, v)), " \
        "sm_scale=scale"
    call += ", causal=True" * args["causal"] + f", window_left={args['window_left']}" * (args["window_left"] >= 0)
    call += f", logits_soft_cap={number(f.softcap)}" if f.softcap is not None else ""
    call += ", custom_mask=allowed[0]" * custom + ", return_lse=True)"
    lines = ["import math"] * (f.sinks is not None) + [
        "import flashinfer  # one sequence: q (n, h, d), k and v (m, g, d), the NHD layout", "", call,
        "out = out.transpose(0, 1)  # (h, n, d_v); lse (n, h), base 2"]
    if f.sinks is not None:
        lines += _lse_sinks("lse", log2=True, heads_axis="[None, :]")[:1] + [
            "out = out * torch.sigmoid(lse * math.log(2) - sinks).T[..., None]",
            "lse = torch.logaddexp(lse * math.log(2), sinks)  # now a natural log"]
    return Entry("flashinfer", "FlashInfer", lines, args, "2", "(n, h)")


def hf(f: Facts) -> Entry:
    names, parts = [], []
    if f.matrix:
        lines = ["def from_document(batch_idx, head_idx, q_idx, kv_idx):  # the document's mask, head by head",
                 "    return ALLOWED[head_idx, q_idx, kv_idx]", ""]
        parts = ["from_document"]
    else:
        lines = []
        if f.causal is not None:
            names.append("causal_mask_function")
            parts.append("causal_mask_function")
            if f.window is not None:
                names.append("sliding_window_overlay")
                parts.append(f"sliding_window_overlay({f.window})")
        elif f.window is not None:
            names.append("sliding_window_bidirectional_overlay")
            parts.append(f"sliding_window_bidirectional_overlay({f.window - 1})")
        if f.chunk is not None:
            names.append("chunked_overlay")
            parts.append(f"chunked_overlay({f.chunk}, torch.zeros(1, dtype=torch.long))")
        if f.keys is not None:
            names.append("padding_mask_function")
            parts.append("padding_mask_function(KEYS[None])")
    if not parts:
        return Entry("hf", "Hugging Face masks", ["mask_function = allowed = None  # every key: no mask"], {}, None,
                     None)
    offset = f.offset and not f.matrix
    names = ["and_masks", *names] + ["add_offsets_to_mask_function"] * bool(offset)
    head = ["from transformers.masking_utils import (", f"    {', '.join(sorted(set(names)))},", ")", ""]
    lines = head + lines + [f"mask_function = and_masks({', '.join(parts)})"]
    if offset:
        lines.append(f"mask_function = add_offsets_to_mask_function(mask_function, {f.offset}, 0)  # q_idx + m − n")
    lines.append("allowed = mask_function(0, 0, i, j)  # (n, m), True = may attend" if not f.matrix else
                 "allowed = mask_function(0, torch.arange(ALLOWED.shape[0])[:, None, None], i, j)  # (h, n, m)")
    args = {"sliding_window": f.window, "attention_chunk_size": f.chunk}
    notes = [("hf_window", {"w": f.window})] if f.window is not None else []
    return Entry("hf", "Hugging Face masks", lines, args, None, None, notes=notes)


def jax(f: Facts) -> Entry:
    upper = f.causal is None or f.offset == 0
    flags = not (f.chunk is not None or f.keys is not None or f.matrix) and upper
    args: dict = {"scale": f.scale, "is_causal": f.causal is not None and flags,
                  "local_window_size": None, "mask": _masks(f) and not flags, "bias": f.bias}
    if f.window is not None and flags:
        args["local_window_size"] = [f.window - 1, 0 if f.causal is not None else f.window - 1]
    missing = []
    if f.softcap is not None:
        missing.append(("no_softcap", {"alt": "a bias cannot do it either"}))
    if f.sinks is not None:
        missing.append(("jax_sinks", {}))
    if missing:
        return Entry("jax", "JAX", [], args, None, None, missing=missing)
    call = "out = jax.nn.dot_product_attention(Q, K, V"
    call += ", bias=jnp.asarray(bias.numpy())[None]" * f.bias
    call += ", mask=jnp.asarray(allowed.numpy())[None]" * args["mask"]
    call += ", scale=scale" + ", is_causal=True" * args["is_causal"]
    if args["local_window_size"]:
        call += ", local_window_size=({}, {})".format(*args["local_window_size"])
    lines = ["import jax", "import jax.numpy as jnp", "", 'jax.config.update("jax_enable_x64", True)  # float64',
             "Q, K, V = (jnp.asarray(x.numpy()).transpose(0, 2, 1, 3) for x in (q, k, v))  # (b, n, h, d)",
             call + ")  # (b, n, h, d_v); no lse"]
    notes = [("jax_empty", {})] if f.empty else []
    return Entry("jax", "JAX", lines, args, None, None, notes=notes)
