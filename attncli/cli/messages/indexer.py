"""Chinese for the messages of ``indexer`` (DeepSeek-V3.2's lightning indexer, attncli.inputs.indexer)."""

CATALOGUE = {
    "is required: how many keys each query keeps, e.g. top_k: 2048": "必须给出：每个查询保留多少个键，例如 top_k: 2048",
    "is {} but indexer.d is {} (need {}×{})": "是 {}，但 indexer.d 是 {}（需要 {}×{}）",
    "has {} columns but the indexer has {} of d = {} (need {}×{}·{})":
        "有 {} 列，但索引器有 {}，每个 d = {}（需要 {}×{}·{}）",
    "selects keys for a softmax; normalize: {} has none": "为 softmax 选择键；normalize: {} 没有 softmax",
    "selects one set of keys for every head, but the mask differs between heads (a per-head mask matrix, or −inf "
    "cells of a per-head score bias)":
        "为所有头选择同一组键，但各个头的掩码不同（每个头一个的掩码矩阵，或每个头一个的得分偏置中的 −inf）",
    "is {} but {} give {} numbers per token (need {} rows)": "是 {}，但 {} 每个词元给出 {} 个数（需要 {} 行）",
    "is {} but the indexer has {} (need {}×{}: one weight per head)":
        "是 {}，但索引器有 {}（需要 {}×{}：每个头一个权重）",
    "turns the document's rope.dims = {} numbers, more than the indexer's d = {}; give indexer.rope: {{dims: …}}":
        "旋转文档的 rope.dims = {} 个数，多于索引器的 d = {}；请给出 indexer.rope: {{dims: …}}",
    "reads the rows of inputs (and c_Q with latent); it is not used with queries, keys and values given directly":
        "读取 inputs 的行（用 latent 时还读取 c_Q）；直接给出查询、键和值时不能使用它",
}
PHRASES = {
    "the inputs": "输入", "the context": "上下文",
    "c_Q (r_q = {}, latent's weights.query_down)": "c_Q（r_q = {}，latent 的 weights.query_down）",
}
