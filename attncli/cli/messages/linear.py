"""Chinese for the messages of a linear: document (docs/format.md Part 4): its reader, its run and its output."""

CATALOGUE = {
    "is not written as {} for a linear: document yet; use table, json, or -o FILE.npz":
        "linear: 文档暂时不能写成 {}；请用 table、json 或 -o FILE.npz",
    "emulates softmax attention's eager kernels; a linear: document is computed in float64 only":
        "模拟的是 softmax 注意力的 eager 内核；linear: 文档只用 float64 计算",
    "{} overflows float64 (a decay g > 0 makes the state grow by e^g at every token)":
        "{} 超出了 float64 的范围（衰减 g > 0 会让状态在每个词元处增长 e^g 倍）",
    "replaces softmax attention's {}, which a linear: document does not have":
        "替换的是 softmax 注意力的 {}，而 linear: 文档没有这一项",
    "{} is not an array of this layer: give any of {}": "{} 不是这一层的数组：可以给出 {} 中的任意一个",
    "makes a layer of linear attention, which attncli compute, explain, heatmap and check take, not this command yet "
    "(docs/format.md Part 4)":
        "描述的是一层线性注意力，attncli compute、explain、heatmap 和 check 能处理它，"
        "这个命令暂时不能（docs/format.md 第 4 部分）",
    "is {}; expected {} = {}": "是 {}；应为 {} = {}",
    "{} is not a kind of linear attention: gated_delta (Gated DeltaNet), kda (Kimi Delta Attention) or lightning "
    "(MiniMax)":
        "{} 不是线性注意力的一种：应为 gated_delta（Gated DeltaNet）、kda（Kimi Delta Attention）"
        "或 lightning（MiniMax）",
    "is {}, which is not a multiple of heads = {} (each query/key head serves value_heads / heads value heads)":
        "是 {}，不是 heads = {} 的倍数（每个查询/键头服务 value_heads / heads 个值头）",
    "is required: W ({})": "必须给出：W（{}）",
    "is required ({} = {})": "必须给出（{} = {}）",
    "is {}; expected {} with {}": "是 {}；应为 {}，有 {}",
    "is {}; expected {}: {}": "是 {}；应为 {}：{}",
    "is required: X (n × d_model), or queries, keys, values, beta and g in linear:":
        "必须给出：X（n × d_model），或者在 linear: 中给出 queries、keys、values、beta 和 g",
    "is {}; expected a matrix n × d_model": "是 {}；应为 n × d_model 的矩阵",
    "is {}; expected one kernel per channel of [q | k | v]: (2·h_k·d_k + h_v·d_v) × w = {} × w":
        "是 {}；应为 [q | k | v] 的每个通道一个卷积核：(2·h_k·d_k + h_v·d_v) × w = {} × w",
    "is {}; expected γ, one number per value channel: d_v = {}": "是 {}；应为 γ，每个值通道一个数：d_v = {}",
    "{} is not silu or sigmoid": "{} 不是 silu 或 sigmoid",
    "cannot be used with queries, keys, values, beta and g given directly in linear:":
        "在 linear: 中直接给出 queries、keys、values、beta 和 g 时不能使用",
    "is {}; expected h_k × n × d_k": "是 {}；应为 h_k × n × d_k",
    "is {}; expected h_v × n × d_v with n = {} and h_v a multiple of h_k = {}":
        "是 {}；应为 h_v × n × d_v，其中 n = {}，h_v 是 h_k = {} 的倍数",
    "is required with {} (what the kernel receives is given together)":
        "与 {} 一起时必须给出（内核收到的量要一起给出）",
    "makes q, k, v, β or g from inputs; it is not used with them given directly":
        "是从 inputs 计算 q、k、v、β 或 g 用的；直接给出它们时不使用",
    "is {} but the given arrays have {}": "是 {}，但给出的数组有 {}",
    "is not used with linear: (a layer of linear attention takes tokens, inputs and linear only)":
        "不与 linear: 一起使用（线性注意力层只接受 tokens、inputs 和 linear）",
    "unknown key {} for a linear: document (its keys: {})": "linear: 文档没有键 {}（它的键：{}）",
    "a linear: document has one step to explain, the delta rule or lightning attention's sum; leave out --step and "
    "--why":
        "linear: 文档只有一步可讲解，即 delta 规则或闪电注意力的求和；请去掉 --step 和 --why",
    "(the backward pass) is given for q, k, v, β and g given directly only, so far: give them in linear:, or leave "
    "gradient out":
        "（反向传播）目前只适用于直接给出的 q、k、v、β 和 g：请在 linear: 中给出它们，或去掉 gradient",
    "is {}; expected dL/d head_outputs, h_v × n × d_v = {} (or n × h_v·d_v)":
        "是 {}；应为 dL/d head_outputs，h_v × n × d_v = {}（或 n × h_v·d_v）",
    "{} is not in this document's result (it needs {})": "{} 不在这个文档的结果中（它需要 {}）",
    # lightning attention (kind: lightning)
    "belongs to the delta rule (gated_delta, kda); lightning attention has no β, g or conv (docs/format.md Part 4)":
        "属于 delta 规则（gated_delta、kda）；闪电注意力没有 β、g 或卷积（docs/format.md 第 4 部分）",
    "is required: layer and layers (MiniMax's s_h of layer l of L layers), or h numbers s_h":
        "必须给出：layer 和 layers（MiniMax 在 L 层中第 l 层的 s_h），或 h 个数 s_h",
    "is required (the slopes of layer l of L layers)": "必须给出（L 层中第 l 层的斜率）",
    "{} is not a layer from 0 to layers − 1 = {}": "{} 不是 0 到 layers − 1 = {} 之间的层",
    "{} is neither a mapping of layer and layers nor a list of h = {} numbers":
        "{} 既不是含 layer 和 layers 的映射，也不是 h = {} 个数的列表",
    "has {} numbers; expected one per head, h = {}": "有 {} 个数；应为每个头一个，h = {}",
    "has 1 number; expected one per head, h = {}": "只有 1 个数；应为每个头一个，h = {}",
    "{} is not a positive finite number (the slope of head {})": "{} 不是有限的正数（头 {} 的斜率）",
    "{} is not a number (the slope of head {})": "{} 不是数（头 {} 的斜率）",
    "{} is too large for float64 (the slope of head {})": "{} 太大，超出了 float64 的范围（头 {} 的斜率）",
    "{} is not silu, sigmoid or none": "{} 不是 silu、sigmoid 或 none",
    "(the backward pass) is given for q, k and v given directly only, so far: give them in linear:, or leave gradient "
    "out":
        "（反向传播）目前只适用于直接给出的 q、k 和 v：请在 linear: 中给出它们，或去掉 gradient",
    "is required: X (n × d_model), or queries, keys and values in linear:":
        "必须给出：X（n × d_model），或者在 linear: 中给出 queries、keys 和 values",
    "belongs to the delta rule; lightning attention has no β or g": "属于 delta 规则；闪电注意力没有 β 或 g",
    "is {}; expected γ, one number per output of a token: h·d_v = {}":
        "是 {}；应为 γ，每个词元的每个输出一个数：h·d_v = {}",
    "makes or changes q, k, v or o from inputs; it is not used with them given directly":
        "是从 inputs 计算或改变 q、k、v 或 o 用的；直接给出它们时不使用",
    "cannot be used with queries, keys and values given directly in linear:":
        "在 linear: 中直接给出 queries、keys 和 values 时不能使用",
    "is {}; expected h × n × d_k = {}": "是 {}；应为 h × n × d_k = {}",
    "is {}; expected h × n × d_k": "是 {}；应为 h × n × d_k",
    "is {}; expected h × n × d_v with h = {}, n = {}": "是 {}；应为 h × n × d_v，其中 h = {}，n = {}",
    "belongs to lightning attention (kind: lightning), not to the delta rule":
        "属于闪电注意力（kind: lightning），不属于 delta 规则",
    "{} is not a list of two or more matrices to multiply": "{} 不是由两个或更多待相乘矩阵组成的列表",
    "is {} after {}: the product needs matrices whose inner sizes agree":
        "是 {}，前一个是 {}：相乘的矩阵内侧大小必须一致",
    # attncli heatmap on a linear: document
    "draws a linear: document's state (docs/format.md Part 4); this document has attention weights: leave it out":
        "画的是 linear: 文档的状态（docs/format.md 第 4 部分）；这个文档有注意力权重：请去掉它",
    "belongs to lightning attention (kind: lightning); the delta rule has no such matrix: draw --of state":
        "属于闪电注意力（kind: lightning）；delta 规则没有这个矩阵：请画 --of state",
    "picks the token of --of state; leave it out": "选的是 --of state 的词元；请去掉它",
}
