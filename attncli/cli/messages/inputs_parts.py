"""Chinese for the messages of the document's parts: masks, biases, RoPE, norms, latent attention (attncli.inputs)."""

CATALOGUE = {
    "has {} columns, r_kv + d_r with d_r = rope.dims = {}: that leaves no latent (r_kv ≥ 1)":
        "有 {} 列，即 r_kv + d_r，其中 d_r = rope.dims = {}：这样就没有潜在向量了（需要 r_kv ≥ 1）",
    "gives d_k = {} numbers per head ({}), d_nope + d_r with d_r = rope.dims = {}: that leaves no unrotated part "
    "(d_nope ≥ 1)":
        "每个头给出 d_k = {} 个数（{}），即 d_nope + d_r，其中 d_r = rope.dims = {}：这样就没有不旋转的部分了（需要"
        " d_nope ≥ 1）",
    "is required: the norm of the latent c_KV (r_kv = {}), e.g. {{kind: rms}}":
        "必须给出：潜在向量 c_KV 的归一化（r_kv = {}），例如 {{kind: rms}}",
    "is {}, but latent attention expands keys and values for every one of the {} query heads (kv_heads is heads)":
        "是 {}，但潜在注意力会为 {} 个查询头中的每一个展开键和值（kv_heads 等于 heads）",
    "latent attention needs rope with dims (d_r, the rotated numbers at the end of each head) and part: last, e.g"
    ". rope: {{dims: 64, part: last}}":
        "潜在注意力需要带 dims（d_r，每个头末尾被旋转的数）和 part: last 的 rope，例如 rope: {{dims: 64, part: last"
        "}}",
    "{} is not an even whole number ≥ 2 (d_r of latent attention)": "{} 不是 ≥ 2 的偶数（潜在注意力的 d_r）",
    "must be last with latent (each head's rotated numbers follow its unrotated ones: [q_nope | q_r])":
        "用 latent 时必须是 last（每个头被旋转的数跟在不旋转的数之后：[q_nope | q_r]）",
    "is required with latent": "用 latent 时必须给出",
    "is {}; expected a matrix with {} rows (one per number of {})": "是 {}；应为有 {} 行的矩阵（{} 的每个数一行）",
    "is {} but {} (need {} rows)": "是 {}，但 {}（需要 {} 行）",
    "give weights.query or weights.query_down with weights.query_up, not both":
        "请给出 weights.query，或者同时给出 weights.query_down 和 weights.query_up，不要两者都给",
    "is required with latent: weights.query (d_model × h·d_k), or weights.query_down (d_model × r_q) with weights"
    ".query_up (r_q × h·d_k)":
        "用 latent 时必须给出：weights.query（d_model × h·d_k），或 weights.query_down（d_model × r_q）加上 weights"
        ".query_up（r_q × h·d_k）",
    "is not used with weights.query_up (give bias.query_down)":
        "与 weights.query_up 一起时不使用（请给出 bias.query_down）",
    "is required with weights.query_down: the norm of c_Q (r_q = {}), e.g. {{kind: rms}}":
        "与 weights.query_down 一起时必须给出：c_Q 的归一化（r_q = {}），例如 {{kind: rms}}",
    "has {} columns, which {} heads cannot split into equal blocks (h·(d_nope + d_r))":
        "有 {} 列，无法被 {} 个头平均分成等宽的块（h·(d_nope + d_r)）",
    "has {} columns, which {} heads cannot split into equal blocks of d_nope + d_v ({})":
        "有 {} 列，无法被 {} 个头平均分成宽为 d_nope + d_v 的块（{}）",
    "has {} columns per head ({} for {}), read as d_nope = {} key columns then d_v value columns: that leaves d_v"
    " = {} ({}; need {}·({} + d_v) columns)":
        "每个头有 {} 列（{} 对应 {}），读作 d_nope = {} 个键列，然后是 d_v 个值列：这样 d_v = {}（{}；需要 {}·({} +"
        " d_v) 列）",
    "is {} but weights.{} gives {} columns (need a vector of {})":
        "是 {}，但 weights.{} 给出 {} 列（需要长度为 {} 的向量）",
    "is not used with latent ({})": "与 latent 一起时不使用（{}）",
    "normalises c_Q, made by weights.query_down; weights.query has none":
        "对由 weights.query_down 算出的 c_Q 做归一化；weights.query 没有 c_Q",
    "is given without weights.query_down": "给出了它，却没有 weights.query_down",
    "is used by multi-head latent attention: give latent: {{kv_norm: {{kind: rms}}}} (and rope: {{dims: d_r, part"
    ": last}}) to use it":
        "由多头潜在注意力使用：请给出 latent: {{kv_norm: {{kind: rms}}}}（以及 rope: {{dims: d_r, part: last}}）来"
        "使用它",
    "{} is not one of {}": "{} 不是 {} 之一",
    "is {} but the inputs are {}×{} (need the same shape)": "是 {}，但输入是 {}×{}（需要相同的形状）",
    "has {} columns but weights.w1 has {} (both map to the same d_a)":
        "有 {} 列，但 weights.w1 有 {} 列（两者都映射到同一个 d_a）",
    "is {} but needs d_k×d_a = {}×d_a (or {}×{}×d_a, one per head)":
        "是 {}，但需要 d_k×d_a = {}×d_a（或 {}×{}×d_a，每个头一个）",
    "needs the output as wide as the inputs (d_out = {}, d_model = {}) to add them; give weights.output a shape t"
    "hat maps back to d_model":
        "需要输出与输入一样宽（d_out = {}，d_model = {}）才能相加；请给 weights.output 一个映射回 d_model 的形状",
    "expected true, or a mapping with any of gamma, beta, eps": "应为 true，或含有 gamma、beta、eps 中任意几个的映射",
    "{} is not a positive number (within float64)": "{} 不是正数（在 float64 范围内）",
    "is {} but needs a vector of length d_model = {}": "是 {}，但需要长度为 d_model = {} 的向量",
    "is only used with score: additive": "只在 score: additive 时使用",
    "score: additive needs weights.w1 (d_k × d_a), weights.w2 (d_k × d_a) and weights.v (d_a); weights.{} is miss"
    "ing":
        "score: additive 需要 weights.w1（d_k × d_a）、weights.w2（d_k × d_a）和 weights.v（d_a）；缺少 weights.{}",
    "is {} but needs length d_a = {} (or {}×{}, one per head)": "是 {}，但需要长度 d_a = {}（或 {}×{}，每个头一个）",
    "expected none, causal, a matrix, a file name or a mapping of parts, not a boolean":
        "应为 none、causal、矩阵、文件名或由各部分组成的映射，而不是布尔值",
    "is an empty file name; give none, causal, a matrix or a matrix file's name":
        "是空的文件名；请给出 none、causal、矩阵或矩阵文件的名字",
    "{} is not none, causal, a matrix or a matrix file ({})": "{} 不是 none、causal、矩阵或矩阵文件（{}）",
    "a mask cannot be random; give causal, a matrix, a file or a mapping of parts":
        "掩码不能随机生成；请给出 causal、矩阵、文件或由各部分组成的映射",
    "gives none of causal, window, keys, matrix (write mask: none to attend everywhere)":
        "没有给出 causal、window、keys、matrix 中的任何一个（写 mask: none 表示处处都可关注）",
    "{} is not allow (1 = may attend) or block (1 = masked, as nn.MultiheadAttention)":
        "{} 既不是 allow（1 = 可以关注）也不是 block（1 = 被掩盖，同 nn.MultiheadAttention）",
    "is {} but needs {}×{} (queries × keys){}": "是 {}，但需要 {}×{}（查询 × 键）{}",
    "holds 0 and -inf: that is a float mask added to the scores (PyTorch's float attn_mask); give it as score_bia"
    "s: {{matrix: …}} instead":
        "含有 0 和 -inf：这是加到得分上的浮点掩码（PyTorch 的浮点 attn_mask）；请改为 score_bias: {{matrix: …}}",
    "is {} but there are {} query heads: one slope each": "是 {}，但有 {} 个查询头：每个头一个斜率",
    "{} is not true (an encoder) or false (a decoder's self-attention)":
        "{} 既不是 true（编码器）也不是 false（解码器的自注意力）",
    "{} buckets and max_distance {} leave no logarithmic buckets (T5 uses 32 and 128)":
        "{} 个桶和 max_distance {} 没有留下对数桶（T5 用的是 32 和 128）",
    "is required: buckets × heads (T5's relative_attention_bias.weight)":
        "必须给出：buckets × heads（T5 的 relative_attention_bias.weight）",
    "is {} but needs buckets × heads = {}×{}": "是 {}，但需要 buckets × heads = {}×{}",
    "{} is not a whole number ≥ 1": "{} 不是 ≥ 1 的整数",
    "{} but there are {} keys: one flag per key": "{}，但有 {} 个键：每个键一个标记",
    "T5's buckets need whole-number positions, but {} has {}": "T5 的桶需要整数位置，但 {} 有 {}",
    "{} is not true, upper_left or lower_right": "{} 不是 true、upper_left 或 lower_right",
    "{} does not divide heads: {} (each key/value head serves heads / kv_heads query heads)":
        "{} 不能整除 heads: {}（每个键值头服务于 heads / kv_heads 个查询头）",
    "normalises the output before it is added to the residual; it needs residual: true":
        "在输出加到残差之前对它做归一化；它需要 residual: true",
    "adds the output to the inputs, so it needs d_out = d_model (d_out = {}, d_model = {}); give weights.output a"
    " shape that maps back to d_model":
        "把输出加到输入上，所以需要 d_out = d_model（d_out = {}，d_model = {}）；请给 weights.output 一个映射回 d_m"
        "odel 的形状",
    "{} is not true or false": "{} 不是 true 或 false",
    "is {} but there are {} {}: one position each": "是 {0}，但有 {1} 个{2}：每个一个位置",
    "is required: rms or layer": "必须给出：rms 或 layer",
    "{} is not one of rms, layer": "{} 不是 rms 或 layer",
    "is only used with kind: layer (RMSNorm has no β)": "只在 kind: layer 时使用（RMSNorm 没有 β）",
    "is {} but needs a vector of length {} = {}": "是 {}，但需要长度为 {} = {} 的向量",
    "{} is not one of head (over each head's d_k numbers), projection (over all of a token's numbers, before the "
    "split into heads)":
        "{} 不是 head（对每个头的 d_k 个数）或 projection（对一个词元的全部数，在分成各头之前）",
    "{} is not a number": "{} 不是数",
    "{} is not a positive finite number": "{} 不是有限的正数",
    "{}; {}": "{}；{}",
    "turns pairs of dimensions, but each head has an odd width (d_k = {}); rotate fewer with rope.dims (e.g. {}) "
    "or give heads of even width":
        "按维度对旋转，但每个头的宽度是奇数（d_k = {}）；请用 rope.dims 少旋转一些（例如 {}），或让每个头的宽度为偶"
        "数",
    "{} is not an even whole number ≥ 2 (dimensions are rotated in pairs)": "{} 不是 ≥ 2 的偶数（维度是成对旋转的）",
    "{} is wider than each head (d_k = {}); rope rotates at most d_k dimensions":
        "{} 比每个头还宽（d_k = {}）；rope 最多旋转 d_k 个维度",
    "give base or frequencies, not both (frequencies replace θ^(−2i/dims))":
        "请给出 base 或 frequencies，不要两者都给（frequencies 代替 θ^(−2i/dims)）",
    "is required: {}": "必须给出：{}",
    "is required (a checkpoint without one: max_position_embeddings / original_max_position_embeddings)":
        "必须给出（检查点中没有它时：max_position_embeddings / original_max_position_embeddings）",
    "is {} but rope.dims = {} needs dims/2 = {} {}": "是 {}，但 rope.dims = {} 需要 dims/2 = {} 个{}",
    "holds a number that is not positive and finite (each divides a frequency)":
        "含有一个不是有限正数的数（每个数都要除一个频率）",
    "dynamic scaling raises the base to dims/(dims − 2), so it needs rope.dims ≥ 4 (dims = {})":
        "动态缩放把 base 提升到 dims/(dims − 2) 次方，所以需要 rope.dims ≥ 4（dims = {}）",
    "{} is not above low_freq_factor ({})": "{} 不大于 low_freq_factor（{}）",
    "is 1, but yarn divides by ln θ: give a base above 1": "是 1，但 yarn 要除以 ln θ：请给出大于 1 的 base",
    "{} is too small: longrope's attention factor divides by its logarithm":
        "{} 太小：longrope 的注意力系数要除以它的对数",
    "give scaling or frequencies, not both (scaling derives the frequencies from base)":
        "请给出 scaling 或 frequencies，不要两者都给（scaling 由 base 推出各频率）",
    "is not used by type {} (it is {}'s)": "类型 {} 不使用它（它属于 {}）",
    "is not used by type {}": "类型 {} 不使用它",
    "is required by type {} (L, the length the model was trained at)": "类型 {} 必须给出（L，模型训练时的长度）",
    "is required by type longrope: dims/2 = {} numbers": "类型 longrope 必须给出：dims/2 = {} 个数",
    "{} is negative (0 means not given, as in Hugging Face)": "{} 是负数（0 表示没有给出，同 Hugging Face）",
    "adds a term to the softmax's denominator, but this document has normalize: {} (sinks need normalize: softmax" ")":
        "在 softmax 的分母中加一项，但本文档的 normalize: {}（sinks 需要 normalize: softmax）",
    "is {} but there {}{}{}: one sink logit each": "是 {}，但{}{}{}：每个查询头一个 sink logit",
    "is required: the threshold τ of the largest logit (Kimi K2 used 100)":
        "必须给出：最大 logit 的阈值 τ（Kimi K2 用的是 100）",
    "{} is not a positive number (Kimi K2 used 100)": "{} 不是正数（Kimi K2 用的是 100）",
    "rescales W_Q and W_K, which qk_norm undoes (the norm divides the scale out again); QK-Clip is for layers without"
    " qk_norm":
        "会按比例缩放 W_Q 和 W_K，而 qk_norm 会把它抵消（归一化又把缩放除掉了）；QK-Clip 用于没有 qk_norm 的层",
    "rescales W_Q and W_K, and clip_qkv's clamp does not scale with them; not with clip_qkv":
        "会按比例缩放 W_Q 和 W_K，而 clip_qkv 的截断不随之缩放；不能与 clip_qkv 同用",
    "rescales W_Q and W_K, and with queries, keys and values given directly there are none (max_logits: true gives "
    "the largest logits alone)":
        "会按比例缩放 W_Q 和 W_K，而直接给出查询、键和值时没有这些矩阵（max_logits: true 只给出最大 logit）",
    "rescales the dot-product logits Q·Kᵀ; it needs score: dot": "缩放的是点积 logit Q·Kᵀ；需要 score: dot",
    "{} is not a positive number (Gemma 4 uses 1e-6)": "{} 不是正数（Gemma 4 用的是 1e-6）",
    "makes the values from weights.key, which latent attention does not have":
        "用 weights.key 来得到值，而潜在注意力没有 weights.key",
    "makes the values from the key projection; with values given directly, give them equal to the keys instead":
        "用键投影来得到值；直接给出值时，请改为给出与键相同的值",
    "makes the values from the key projection (V = C·W_K + b_K): leave out {}.value":
        "用键投影来得到值（V = C·W_K + b_K）：请去掉 {}.value",
    "takes an earlier layer's keys and values: it belongs in a layer of a stack (layers:)":
        "取用前面某一层的键和值：它只能写在堆叠（layers:）的某一层里",
    "attends with layer {}'s keys and values, already made: leave out {}":
        "使用第 {} 层已经算好的键和值：请去掉 {}",
    "attends with layer {}'s keys and values, already made: leave out {}.{}":
        "使用第 {} 层已经算好的键和值：请去掉 {}.{}",
    "is {}, but layer {}'s keys have {} key/value heads": "是 {}，但第 {} 层的键有 {} 个键值头",
    "gives queries of width {} per head, but layer {}'s keys have d_k = {}":
        "给出的查询每个头宽 {}，但第 {} 层的键 d_k = {}",
    "{} is not an earlier layer, counting from 0 as layers: does ({})":
        "{} 不是更早的一层（与 layers: 一样从 0 数起：{}）",
}
