"""The conventions card's sentences, in English and Chinese, keyed by the ids :mod:`attncli.outputs.card_code` uses."""

from __future__ import annotations

SENTENCES = {
    "en": {
        "title": "Conventions card · {name}",
        "shape": "heads: h = {h} for the queries, g = {g} for the keys and values; n = {n} queries, m = {m} keys; "
                 "scale = {scale}",
        "command": "The arrays, written once:",
        "setup": "Setup: Q, K and V as a kernel receives them (every line below starts from here)",
        "lse_e": "lse: natural log, {shape}", "lse_2": "lse: base 2, {shape}", "lse_none": "lse: not returned",
        "none": "no equivalent", "note": "note",
        "no_softcap": "no soft cap (c·tanh(z / c)); {alt} has one",
        "sdpa_empty": "a query with no allowed key gives NaN here (attncli: weights 0, output 0)",
        "sdpa_lower_right": "torch.nn.attention.bias.causal_lower_right(n, m) is the same causal mask as a bias object",
        "top_left": "its causal diagonal is aligned bottom-right (j ≤ i + m − n); the document's is top-left "
                    "(j ≤ i) with n = {n} ≠ m = {m}",
        "window_offset": "its window is centred on i + m − n; the document's on i, with n ≠ m",
        "no_bias": "no additive bias matrix (only ALiBi slopes)",
        "flash_alibi": "its ALiBi is −slope·|i + m − n − j|; the document's slope·(j − i) differs for keys after "
                       "the query",
        "bf16": "runs in fp16 or bf16 on a GPU: judge its numbers with attncli check --against and --dtype",
        "no_chunk": "no chunked mask (⌊j / C⌋ = ⌊i′ / C⌋)",
        "flash_keys": "no key-padding mask: give each sequence's real keys with flash_attn_varlen_func "
                      "(cu_seqlens_k), which also moves a bottom-right causal diagonal",
        "no_matrix": "no mask matrix",
        "flashinfer_bias": "no bias: pos_encoding_mode=\"ALIBI\" brings FlashInfer's own slopes and alignment",
        "per_head": "custom_mask is one (n, m) mask for every head; the document's differs by head",
        "hf_window": "sliding_window = {w} in a model's config; the causal overlay keeps kv_idx > q_idx − {w}, "
                     "the bidirectional one |q_idx − kv_idx| ≤ its argument",
        "jax_sinks": "no sinks: append a key and value of zeros whose bias is s_h (as the SDPA lines do)",
        "jax_empty": "a query with no allowed key gets the mean of the values here (the XLA path masks with a "
                     "large negative number, not −inf); attncli gives 0",
    },
    "zh": {
        "title": "约定对照卡 · {name}",
        "shape": "头数：查询 h = {h}，键和值 g = {g}；n = {n} 个查询，m = {m} 个键；缩放 = {scale}",
        "command": "先写出这些数组（一次即可）：",
        "setup": "准备：内核收到的 Q、K、V（下面每一段代码都从这里开始）",
        "lse_e": "lse：自然对数，{shape}", "lse_2": "lse：以 2 为底，{shape}", "lse_none": "lse：不返回",
        "none": "无对应写法", "note": "注意",
        "no_softcap": "没有软上限（c·tanh(z / c)）；{alt} 有",
        "sdpa_empty": "没有任何可见键的查询在这里得到 NaN（attncli 给出权重 0、输出 0）",
        "sdpa_lower_right": "torch.nn.attention.bias.causal_lower_right(n, m) 以偏置对象的形式给出同一个因果掩码",
        "top_left": "它的因果对角线按右下角对齐（j ≤ i + m − n）；文档的按左上角对齐（j ≤ i），而 n = {n} ≠ m = {m}",
        "window_offset": "它的窗口以 i + m − n 为中心；文档的以 i 为中心，而 n ≠ m",
        "no_bias": "不接受加性偏置矩阵（只接受 ALiBi 斜率）",
        "flash_alibi": "它的 ALiBi 是 −slope·|i + m − n − j|；文档的 slope·(j − i) 在查询之后的键上与之不同",
        "bf16": "在 GPU 上以 fp16 或 bf16 运行：用 attncli check --against 加 --dtype 判断它的数值",
        "no_chunk": "没有分块掩码（⌊j / C⌋ = ⌊i′ / C⌋）",
        "flash_keys": "没有键填充掩码：用 flash_attn_varlen_func（cu_seqlens_k）只给出每个序列的真实键，"
                      "这也会移动右下角对齐的因果对角线",
        "no_matrix": "不接受掩码矩阵",
        "flashinfer_bias": "不接受偏置：pos_encoding_mode=\"ALIBI\" 使用 FlashInfer 自己的斜率和对齐方式",
        "per_head": "custom_mask 是所有头共用的一个 (n, m) 掩码；文档的掩码各头不同",
        "hf_window": "模型配置里写 sliding_window = {w}；因果叠加保留 kv_idx > q_idx − {w}，双向叠加保留 "
                     "|q_idx − kv_idx| ≤ 其参数",
        "jax_sinks": "没有注意力汇：追加一个全零的键和值，其偏置为 s_h（如 SDPA 那几行所做）",
        "jax_empty": "没有任何可见键的查询在这里得到各值的平均（XLA 实现用一个很大的负数而不是 −inf 来屏蔽）；"
                     "attncli 给出 0",
    },
}


def sentence(language: str, key: str, **fields) -> str:
    return SENTENCES[language][key].format(**fields)
