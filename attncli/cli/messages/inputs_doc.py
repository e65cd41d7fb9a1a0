"""Chinese for the messages of reading the document and its values (attncli.inputs)."""

CATALOGUE = {
    # a batch of sequences (attncli.inputs.batch, attncli.cli.batch)
    "emulates one sequence's kernel; check --against judges a whole batch":
        "模拟的是单个序列的内核；check --against 可以判断整个批次",
    "writes one sequence's matrices: write the batch as JSON, tables or a .npz":
        "只写出单个序列的矩阵：请把批次写成 JSON、表格或 .npz",
    "{} (batch[{}] has none)": "{}（batch[{}] 没有）",
    "is {}; expected one of {} ({})": "是 {}；应为 {} 之一（{}）",
    "with layout: give dO as an array in the queries' layout (with d_v), not a random spec":
        "有 layout: 时，请把 dO 按查询的布局（以 d_v 为宽度）给成数组，而不是随机规格",
    "with layout: takes causal, window and chunk (rules every sequence follows), not a matrix or key flags sized for "
    "one sequence":
        "有 layout: 时只接受 causal、window 和 chunk（每个序列都遵循的规则），不接受按单个序列大小给出的矩阵或键标记",
    "with layout: takes alibi and relative, not a matrix sized for one sequence":
        "有 layout: 时只接受 alibi 和 relative，不接受按单个序列大小给出的矩阵",
    "queries, keys and values (and the gradient) need the same batch size: they have {}":
        "queries、keys 和 values（以及 gradient）需要相同的批大小：它们分别是 {}",
    "gives the lengths of both queries and keys: leave out cu_seqlens_q and cu_seqlens_k":
        "同时给出了查询和键的长度：请去掉 cu_seqlens_q 和 cu_seqlens_k",
    "has {} sequences but cu_seqlens_q has {}": "有 {} 个序列，但 cu_seqlens_q 有 {} 个",
    "have {} rows but the keys {}": "有 {} 行，但键有 {} 行",
    "has {} rows but the queries {}": "有 {} 行，但查询有 {} 行",
    "needs cu_seqlens_q (or cu_seqlens): where each packed sequence starts":
        "需要 cu_seqlens_q（或 cu_seqlens）：每个打包序列从哪里开始",
    "expected a list of whole numbers: 0, then where each sequence ends":
        "应为整数列表：先是 0，然后是每个序列结束的位置",
    "must start at 0, grow at every sequence (none empty) and end at the {} rows of the {}":
        "必须从 0 开始，每个序列都要增长（不能有空序列），并以 {} 的 {} 行结束",
    "holds {} sequences; at most {} are computed (one at a time)": "有 {} 个序列；最多计算 {} 个（逐个计算）",
    "is {}; the batch's layout gives it as {}": "是 {}；按批次的布局它应为 {}",
    "needs queries, keys and values given directly (a batch is what a kernel receives)":
        "需要直接给出 queries、keys 和 values（批次就是内核收到的东西）",
    "cannot be given for a whole batch: each sequence is labelled and placed from 0":
        "不能为整个批次给出：每个序列各自编号，位置从 0 开始",
    "is {}; layout: {} takes {} (4 axes)": "是 {}；layout: {} 接受 {}（4 个轴）",
    "is {}; layout: thd takes {} (3 axes)": "是 {}；layout: thd 接受 {}（3 个轴）",
    "of packed sequences have no one shape: judge head_outputs and lse (or give a bshd batch)":
        "打包序列的这一项没有统一的形状：请判断 head_outputs 和 lse（或给出 bshd 批次）",
    "goes with layout: thd (packed sequences)": "要与 layout: thd（打包序列）一起使用",
    "{} is not valid JSON (strict JSON has no NaN or Infinity)":
        "{} 不是有效的 JSON（严格的 JSON 没有 NaN 或 Infinity）",
    "line {}: the tag {} is not allowed (attncli reads plain data only)":
        "第 {} 行：不允许使用标签 {}（attncli 只读取普通数据）",
    "the document's file name is empty: give the document's file, or - to read standard input":
        "文档的文件名是空的：请给出文档文件，或用 - 从标准输入读取",
    "the document is empty (expected a mapping with at least 'inputs')": "文档是空的（应为至少含有 'inputs' 的映射）",
    "the top level is {}; expected a mapping with at least 'inputs'": "顶层是 {}；应为至少含有 'inputs' 的映射",
    "holds several YAML documents (separated by ---); give one": "含有多个 YAML 文档（以 --- 分隔）；请只给一个",
    "line {}: nested too deeply (over {} lists and mappings in each other)":
        "第 {} 行：嵌套太深（列表和映射互相嵌套超过 {} 层）",
    "line {}: keys must be names, not a {}": "第 {} 行：键必须是名字，而不是 {}",
    "line {}: keys must be names, not {}": "第 {} 行：键必须是名字，而不是 {}",
    "line {}: YAML merge keys (<<) are not allowed; write the keys out":
        "第 {} 行：不允许使用 YAML 合并键（<<）；请把键逐个写出",
    "line {}: duplicate key {}": "第 {} 行：键 {} 重复",
    "line {}: {} is not a valid !!{}": "第 {} 行：{} 不是有效的 !!{}",
    "duplicate key {}": "键 {} 重复",
    "invalid JSON at line {}, column {}: {}": "第 {} 行第 {} 列的 JSON 无效：{}",
    "is nested too deeply (lists and mappings inside each other)": "嵌套太深（列表和映射互相嵌套）",
    "invalid YAML{}: {}": "YAML 无效{}：{}",
    "invalid YAML: {}": "YAML 无效：{}",
    "line {}: YAML aliases (*{}) are not allowed; write the values out":
        "第 {} 行：不允许使用 YAML 别名（*{}）；请把值逐个写出",
    "the string {} holds half of a UTF-16 surrogate pair (\\ud800–\\udfff escapes come in pairs)":
        "字符串 {} 含有半个 UTF-16 代理对（\\ud800–\\udfff 转义必须成对出现）",
    "inputs + positional (X + P) overflow float64 at row {} ({}), column {}; the numbers in the document are too "
    "large to compute with":
        "inputs + positional（X + P）在第 {} 行（{}）第 {} 列超出了 float64 的范围；文档中的数太大，无法计算",
    "is given but there is no context (cross-attention needs 'context')":
        "给出了它，但没有 context（交叉注意力需要 'context'）",
    "has no backward pass through latent's projections in attncli; leave gradient out, or give the expanded queri"
    "es, keys and values directly":
        "在 attncli 中没有穿过 latent 投影的反向传播；请去掉 gradient，或直接给出展开后的查询、键和值",
    "is required: a matrix with one row per token": "必须给出：每个词元一行的矩阵",
    "is {}; expected a matrix with one row per token, e.g. [[1, 0], [0, 1]]":
        "是 {}；应为每个词元一行的矩阵，例如 [[1, 0], [0, 1]]",
    "{}; its {} columns are {} head{} of d_k = {}: for grouped-query attention set kv_heads: {}":
        "{0}；它的 {1} 列是 {2} 个头，每个 d_k = {4}：分组查询注意力请设置 kv_heads: {5}",
    "the 3-D weights disagree on the number of heads ({})": "三维权重给出的头数不一致（{}）",
    "is {} but {} {} {} columns (need {})": "是 {0}，但 {1} 有 {3} 列（需要 {4}）",
    "gives gates of width {} per head but the values have d_v = {} (H ⊙ G needs {}×{}·{})":
        "给出的门控每个头宽 {}，但值的 d_v = {}（H ⊙ G 需要 {}×{}·{}）",
    "is {}; expected a vector of length {}": "是 {}；应为长度 {} 的向量",
    "has length {} but {} give {} columns (need {})": "长度为 {}，但{}有 {} 列（需要 {}）",
    "has length {} but {} gives {} columns (need {})": "长度为 {}，但 {} 有 {} 列（需要 {}）",
    "makes Q, K and V from inputs; it is not used with queries, keys and values given directly":
        "用输入算出 Q、K 和 V；直接给出查询、键和值时不使用它",
    "is {} but the concatenated heads have {}·{} = {} columns (need {}×d_out)":
        "是 {}，但拼接后的各头有 {}·{} = {} 列（需要 {}×d_out）",
    "gives keys of width {} per head but weights.query gives queries of width {} (queries and keys need the same "
    "d_k)":
        "给出的键每个头宽 {}，但 weights.query 给出的查询每个头宽 {}（查询和键需要相同的 d_k）",
    "is 3-D with {} but heads is {}": "是三维的，有 {}，但 heads 是 {}",
    "has rows of {} numbers but inputs have {}: without weights.query and weights.key the queries are the inputs and "
    "the keys the context, which then need the same width (give weights.query and weights.key)":
        "每行有 {} 个数，但输入每行有 {} 个：没有 weights.query 和 weights.key 时，查询就是输入本身，键就是上下文本身，"
        "两者的宽度必须相同（请给出 weights.query 和 weights.key）",
    "is a vector of {}; expected a {}×d matrix (rows: the {} columns){}":
        "是长度为 {} 的向量；应为 {}×d 的矩阵（行：{} 的各列）{}",
    "is given without weights.gate (G = σ(X̂·W_G + b_G))": "给出了它，却没有 weights.gate（G = σ(X̂·W_G + b_G)）",
    "is omitted, so it is the {}×{} identity, whose {} columns {} heads cannot split into equal blocks; give the "
    "weight":
        "省略了，所以它是 {}×{} 的单位矩阵，它的 {} 列无法被 {} 个头平均分成等宽的块；请给出这个权重",
    "has {} columns, which {} heads cannot split into equal blocks": "有 {} 列，无法被 {} 个头平均分成等宽的块",
    "unknown key {} (did you mean {}?)": "未知的键 {}（是不是 {}？）",
    "is omitted, so it would be the {}×{} identity ({}); give the weight, or fewer input columns":
        "省略了，所以它会是 {}×{} 的单位矩阵（{}）；请给出这个权重，或减少输入的列数",
    "null (or an empty value) is not a scale: write scale: none to leave the scores unscaled (× 1), or leave scal"
    "e out for the default 1/√d_k (scale: sqrt)":
        "null（或空值）不是缩放：写 scale: none 表示不缩放得分（× 1），或不写 scale 使用默认的 1/√d_k（scale: sqrt"
        "）",
    "has {} but {} {} {}": "有 {0}，但 {1} 有 {3}",
    "expected {}": "应为 {}",
    "{} is not a {}finite number": "{} 不是{}有限的数",
    "{} is not sqrt, none or a number": "{} 不是 sqrt、none 或数",
    "{} is beyond float64 (about ±1.8e308 at most)": "{} 超出了 float64 的范围（最多约 ±1.8e308）",
    "expected a list of labels or one string": "应为标签的列表或一个字符串",
    "{} is too large for float64": "{} 太大，超出了 float64 的范围",
    "label {} is not text": "标签 {} 不是文本",
    "is not a regular file (a device or socket)": "不是普通文件（而是设备或套接字）",
    "is a directory, not {}": "是一个文件夹，而不是 {}",
    "is binary, not UTF-8 text": "是二进制文件，不是 UTF-8 文本",
    "{} of version {}.{}; attncli reads 1.0 and 2.0": "{}，版本为 {}.{}；attncli 能读取 1.0 和 2.0",
    "{} is larger than {}; {}": "{} 大于 {}；{}",
    "the file name holds a NUL character": "文件名含有 NUL 字符",
    "permission denied (the file, or a folder on its way, may not be read)":
        "没有权限（文件或其路径上的某个文件夹不可读）",
    "invalid UTF-8 at byte {} (line {}): the file must be UTF-8 text":
        "第 {} 字节（第 {} 行）的 UTF-8 无效：文件必须是 UTF-8 文本",
    "is closed: there is no {} to read (give a file, or pipe one in)":
        "已关闭：没有 {} 可读（请给出文件，或用管道传入）",
    "is empty; give a file name, or - for standard input": "是空的；请给出文件名，或用 - 表示标准输入",
    "is {}; expected a .npz, .safetensors or .npy file": "是 {}；应为 .npz、.safetensors 或 .npy 文件",
    "no such file": "没有这个文件",
    "holds none of {}": "不含 {} 中的任何一个",
    "holds {}, which --against does not read; it reads {}": "存放的是 {}，--against 不读取它；它读取 {}",
    "holds one array, named by the file's name, which should be one of {}":
        "只存放一个数组，以文件名命名，文件名应为 {} 之一",
    "holds {} values, not numbers": "存放的是 {} 类型的值，不是数",
    "is not a readable .npy file of numbers (pickles are refused)": "不是可读的数值 .npy 文件（拒绝读取 pickle）",
    "is not a readable .npz archive of numbers (pickles are refused)": "不是可读的数值 .npz 压缩包（拒绝读取 pickle）",
    "is {}; expected h × rows × d, or rows × h·d": "是 {}；应为 h × rows × d，或 rows × h·d",
    "has {} columns, which {} cannot split into equal blocks": "有 {} 列，无法被 {} 平均分成等宽的块",
    "have d_k = {} per head but the queries have {} (Q·Kᵀ needs the same)":
        "每个头的 d_k = {}，但查询的是 {}（Q·Kᵀ 需要两者相同）",
    "have {} rows but there are {} keys (one value per key)": "有 {} 行，但有 {} 个键（每个键一个值）",
    "is required with {}: Q, K and V are given together": "必须与 {} 一起给出：Q、K 和 V 要一起给出",
    "cannot be used with queries, keys and values given directly (they are the projections' output: there is no X"
    ", weight, norm or residual around them)":
        "直接给出查询、键和值时不能使用（它们是投影的输出：周围没有 X、权重、归一化或残差）",
    "is 3-D with {} but {} is {}": "是三维的，有 {}，但 {} 是 {}",
    "random: {} is not an initialiser (expected one of {})": "random: {} 不是初始化方法（应为 {} 之一）",
    "seed: {} is not a whole number ≥ 0": "seed: {} 不是 ≥ 0 的整数",
    "shape: {} would need {} of memory, more than the {} attncli generates for one random matrix (save a larger o"
    "ne as .npy)":
        "shape: {} 需要 {} 的内存，超过了 attncli 为一个随机矩阵生成的上限 {}（请把更大的矩阵存为 .npy）",
    "low: {} is above high: {}": "low: {} 大于 high: {}",
    "random: {} needs a matrix (fan-in and fan-out), not shape {}":
        "random: {} 需要矩阵（fan-in 和 fan-out），而不是形状 {}",
    "random: {} with these parameters gives numbers beyond float64 (inf); use smaller ones":
        "random: {} 在这些参数下会得到超出 float64 的数（inf）；请用更小的参数",
    "shape: {} is not a list of 1 to 3 sizes, e.g. [4, 3]": "shape: {} 不是含 1 到 3 个大小的列表，例如 [4, 3]",
    "{}: {} is not a finite number (within float64)": "{}: {} 不是有限的数（在 float64 范围内）",
    "{}: {} is negative; it must be ≥ 0": "{}: {} 是负数；它必须 ≥ 0",
    "random: give a shape, e.g. shape: [4, 3] (nothing else in the document fixes it)":
        "random: 请给出形状，例如 shape: [4, 3]（文档中没有别的东西能确定它）",
    "shape: {} is not a positive whole number": "shape: {} 不是正整数",
    "{} is not a positive number (Llama 4 uses 8192)": "{} 不是正数（Llama 4 用的是 8192）",
    "is required: the factor α of R = X₀ + α·Y (Granite's residual_multiplier)":
        "必须给出：R = X₀ + α·Y 中的系数 α（Granite 的 residual_multiplier）",
    "{} is not a positive number (Granite's residual_multiplier, e.g. 0.22)":
        "{} 不是正数（Granite 的 residual_multiplier，例如 0.22）",
    "needs dot-product scores; this document has score: {}, whose weights have no log-sum-exp (the backward pass "
    "here is a softmax's)":
        "需要点积得分；本文档的 score: {}，其权重没有 log-sum-exp（这里的反向传播针对的是 softmax）",
    "needs normalize: softmax; this document has normalize: {}, which has no log-sum-exp (the backward pass here "
    "is a softmax's)":
        "需要 normalize: softmax；本文档的 normalize: {} 没有 log-sum-exp（这里的反向传播针对的是 softmax）",
    "is {} but the block's last quantity, {}, is {} (the gradient is dL/d({}): it has that shape{})":
        "是 {}，但该块的最后一个量 {} 是 {}（梯度是 dL/d({})：它具有那个形状{}）",
}
