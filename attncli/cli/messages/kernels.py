"""Chinese for the messages of the kernel engineer's Python API (attncli.reference, merge, assert_close)."""

CATALOGUE = {
    "{} is {} ({} axes) but needs {} axes": "{} 是 {}（{} 个轴），但需要 {} 个轴",
    "{} is {} and holds {} at {}: every value must be a finite number{}":
        "{0} 是 {1}，在 {3} 处存放着 {2}：每个值都必须是有限的数{4}",
    "{} is {} but needs {} axes": "{} 是 {}，但需要 {} 个轴",
    "{} is not an array of numbers (its rows are not all the same length)":
        "{} 不是一个数的数组（它的各行长度不都相同）",
    "assert_close was given no result to judge: pass out=, lse=, dq=, dk= or dv=":
        "assert_close 没有拿到要评判的结果：请传入 out=、lse=、dq=、dk= 或 dv=",
    "{} holds {}: it must be ≥ 0": "{} 含有 {}：它必须 ≥ 0",
    "{} is {} but must be a finite number{}": "{} 是 {}，但必须是有限的数{}",
    "{} is {}, which does not broadcast to {} ({})": "{} 是 {}，不能广播成 {}（{}）",
    "q is {}, k {}, v {}: as layout={} ({}) {}{}": "q 是 {}，k 是 {}，v 是 {}：按 layout={}（{}）读，{}{}",
    "q is {}, k {}, v {}: as layout='thd' ({}) they need the same tokens in k and v, the same head dim in q and k, "
    "and key/value heads that divide the query heads":
        "q 是 {}，k 是 {}，v 是 {}：按 layout='thd'（{}）读，k 和 v 需要相同的词元，q 和 k 需要相同的头维度，"
        "键值头数还要能整除查询头数",
    "cu_seqlens_q is {} but cu_seqlens_k is {}: one entry more than sequences, the same sequences in both":
        "cu_seqlens_q 是 {}，而 cu_seqlens_k 是 {}：两者都应比序列数多一项，序列也相同",
    "block_table[{}] names page {} but {} is {} ({} pages)": "block_table[{}] 指向第 {} 页，但 {} 是 {}（共 {} 页）",
    "k_cache takes layout 'bshd' or 'bhsd' (flash_attn_with_kvcache's q)":
        "k_cache 只接受 layout 'bshd' 或 'bhsd'（flash_attn_with_kvcache 的 q）",
    "q is {} ({}), k_cache {}, v_cache {}: the caches are (pages or batch, page size, kv heads, dim) with q's head "
    "dim, and kv heads dividing q's heads":
        "q 是 {}（{}），k_cache 是 {}，v_cache 是 {}：缓存的形状是（页数或批大小，页大小，键值头数，维度），"
        "头维度与 q 相同，键值头数要能整除 q 的头数",
    "cache_seqlens holds {} but the cache holds {} keys per sequence":
        "cache_seqlens 含有 {}，但缓存每个序列只有 {} 个键",
    "{} is {} but there are {} sequences": "{} 是 {}，但有 {} 个序列",
    "{} is {} but layout='thd' takes {} (3 axes)": "{} 是 {}，但 layout='thd' 接受的是 {}（3 个轴）",
    "{} is {} {}: it must start at 0, never decrease and end at the {} tokens of {}":
        "{0} 是 {1} {2}：它必须从 0 开始、不减少，并结束于 {4} 的 {3} 个词元",
    "k_cache is {} without block_table: its first axis is the batch, {} as q's":
        "没有 block_table 时 k_cache 是 {}：它的第一个轴是批，应与 q 一样为 {}",
    "k is {} and v {} beside k_cache {}: the new keys need q's batch ({}), the cache's {} kv heads and head dim {} "
    "({})":
        "k 是 {}，v 是 {}，k_cache 是 {}：新的键需要与 q 相同的批（{}）、与缓存相同的 {} 个键值头和头维度 {}（{}）",
    "lse_base is {} but must be 'e' (FlashAttention's) or 2 (FlashInfer's)":
        "lse_base 是 {}，但必须是 'e'（FlashAttention 的）或 2（FlashInfer 的）",
    "layout is {} but must be one of {}": "layout 是 {}，但必须是 {} 之一",
    "dout is {} but out is {}": "dout 是 {}，但 out 是 {}",
    "q is {} but layout={} takes {} ({} axes){}": "q 是 {}，但 layout={} 接受的是 {}（{} 个轴）{}",
    "seqused_k is {} but the sequences have {} keys": "seqused_k 是 {}，但各序列的键数是 {}",
    "k and v are needed (or k_cache and v_cache)": "需要 k 和 v（或 k_cache 和 v_cache）",
    "cu_seqlens_q/cu_seqlens_k are for layout='thd' (3 axes), not {}":
        "cu_seqlens_q/cu_seqlens_k 用于 layout='thd'（3 个轴），不用于 {}",
    "window is {} but must be (left, right): whole numbers, −1 for unbounded":
        "window 是 {}，但必须是 (left, right)：整数，−1 表示不限",
    "{} is {} but the longest sequence has {}": "{} 是 {}，但最长的序列有 {}",
    "dropout_p is {} but no dropout_mask is given: the reference draws no random numbers (give the kernel's mask, "
    "True = kept)": "dropout_p 是 {}，但没有给出 dropout_mask：参考计算不抽取随机数（请给出内核的掩码，True = 保留）",
    "layout='thd' needs cu_seqlens_q and cu_seqlens_k (batch + 1 cumulative lengths)":
        "layout='thd' 需要 cu_seqlens_q 和 cu_seqlens_k（批大小 + 1 个累计长度）",
    "causal is {} but must be True (or 'bottom_right'), 'upper_left' or False":
        "causal 是 {}，但必须是 True（或 'bottom_right'）、'upper_left' 或 False",
    "alibi_slopes is {} but needs ({},) or ({}, {}): one slope per query head (and sequence)":
        "alibi_slopes 是 {}，但需要 ({},) 或 ({}, {})：每个查询头（和序列）一个斜率",
    "sinks is {} long but q has {} heads: one logit per query head":
        "sinks 长 {}，但 q 有 {} 个头：每个查询头一个 logit",
    "score_mod returned {} scores for a block of {}: real numbers are needed":
        "score_mod 对一个 {1} 的块返回了 {0} 类型的得分：需要实数",
    "mask_mod returned {} for a block of {}: it must return booleans (True = attend)":
        "mask_mod 对一个 {1} 的块返回了 {0}：它必须返回布尔值（True = 可以关注）",
    "score_mod cannot be differentiated on numpy scores (it is called with complex ones, z + iε, for the backward "
    "pass: {}); give torch tensors to use autograd":
        "score_mod 无法在 numpy 得分上求导（反向计算时用复数 z + iε 调用它：{}）；请给出 torch 张量以使用 autograd",
    "merge takes as many lses as outs, at least one: got {} and {}":
        "merge 需要与 outs 一样多的 lses，至少一个：得到 {} 和 {}",
    "dtype is {} but must be one of bfloat16, float16, float32 (or bf16, fp16, fp32)":
        "dtype 是 {}，但必须是 bfloat16、float16、float32（或 bf16、fp16、fp32）之一",
    "outs[{}] is {} and lses[{}] {}: each lse must be {} and every out {}":
        "outs[{}] 是 {}，lses[{}] 是 {}：每个 lse 必须是 {}，每个 out 必须是 {}",
    "{}: this reference has no {} (it is computed with dout=, and with a cache only dq)":
        "{}：这个参考结果没有 {}（它要用 dout= 计算，有缓存时只有 dq）",
    "{} is {} but the reference's is {} (layout {})": "{} 是 {}，但参考结果的是 {}（layout {}）",
}
