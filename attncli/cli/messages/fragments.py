"""Chinese for the phrases messages are built from (a value described, a hint, a cell, a size)."""

CATALOGUE = {
    "did you mean {}?": "是不是 {}？",
    "expected one of {}": "应为以下之一：{}",
    "key": "键",
    "the string {}": "字符串 {}",
    "a mapping": "映射",
    "a list": "列表",
    "an array of shape {}": "形状为 {} 的数组",
    "a scalar": "标量",
    "{} is not a mask value (use 1/true = may attend, 0/false = masked)":
        "{} 不是掩码值（请用 1/true = 可以关注，0/false = 被掩盖）",
    "{} is not a number (booleans belong only in a mask)": "{} 不是数（布尔值只能用于掩码）",
    "{} is too large for float64 (about ±1.8e308 at most)": "{} 太大，超出了 float64 的范围（最多约 ±1.8e308）",
    " (booleans belong only in a mask)": "（布尔值只能用于掩码）",
    " (this file kind separates cells with tabs)": "（这种文件用制表符分隔单元格）",
    " (this file kind separates cells with commas)": "（这种文件用逗号分隔单元格）",
    " (this file kind separates cells with white space)": "（这种文件用空白分隔单元格）",
    " (write numbers without underscores)": "（写数时不要用下划线）",
    " (a header line? matrix files hold numbers only)": "（是表头行吗？矩阵文件只能含有数）",
    " (write numbers with the digits 0-9)": "（请用数字 0-9 写数）",
    "{} is not allowed here: -inf masks a key, but NaN and +inf are errors":
        "{} 在这里不允许：-inf 表示屏蔽一个键，而 NaN 和 +inf 是错误",
    "is not allowed here: -inf masks a key, but NaN and +inf are errors":
        "在这里不允许：-inf 表示屏蔽一个键，而 NaN 和 +inf 是错误",
    "row {}, column {}": "第 {} 行第 {} 列",
    "head {}, row {}, column {}": "第 {} 个头第 {} 行第 {} 列",
    "entry {}": "第 {} 个元素",
    "line {}, column {}": "第 {} 行第 {} 列",
    "is more than 2^31 (T5 uses 128)": "超过了 2^31（T5 用的是 128）",
    "buckets are more than 2^31 (T5 uses 32)": "个桶超过了 2^31（T5 用的是 32）",
    "is more than 2^31 keys (a window of m keys allows every key)": "超过了 2^31 个键（m 个键的窗口允许关注每个键）",
    "is more than 2^31 keys (a chunk of m keys allows every key)": "超过了 2^31 个键（m 个键的块允许关注每个键）",
    "heads are more than any weight has columns to split among them": "个头，比任何权重能分给它们的列都多",
    "is beyond float64 (about ±1.8e308 at most)": "超出了 float64 的范围（最多约 ±1.8e308）",
    "is not sqrt, none or a finite number": "不是 sqrt、none 或有限的数",
    "1 to 8 or all, and {} or {} when the document has them": "1 到 8 或 all，以及文档中有的 {} 或 {}",
    "the {} format": "{} 格式",
    "binary arrays": "二进制数组",
    "{} of memory, more than the {} attncli may use ({})": "{} 内存，超过了 attncli 可以使用的 {}（{}）",
    "leave them out with {}": "用 {} 省掉它们",
    "write every array with -o FILE.npz, or {}": "用 -o FILE.npz 写出每个数组，或 {}",
    "{} of this document": "本文档的 {}",
    "reading {} ({} {})": "读取 {}（{} {}）",
    "reading this {} text matrix": "读取这个 {} 的文本矩阵",
    "its {} {} array": "它的 {} {} 数组",
    "reading the {} header": "读取 {} 的文件头",
    "a document of {} labels": "含 {} 个标签的文档",
    "writing this result as JSON": "把这个结果写成 JSON",
    "drawing this {} of {} lines": "绘制这个 {1} 行的 {0}",
    "; show less ({}), or {}": "；少显示一些（{}），或{}",
    "; {}": "；{}",
    "save it as .svg, which has no pixel limit": "存为 .svg，它没有像素上限",
    "save it as .txt": "存为 .txt",
    "a font with Chinese characters (Debian, Ubuntu: apt install fonts-noto-cjk; Fedora: dnf install google-noto-"
    "sans-cjk-fonts)":
        "含有中文字符的字体（Debian、Ubuntu：apt install fonts-noto-cjk；Fedora：dnf install google-noto-sans-cjk-f"
        "onts）",
    "holds one matrix: give its name alone (query: x.npy), without file and tensor":
        "只存放一个矩阵：请只写它的名字（query: x.npy），不要 file 和 tensor",
    "is a PyTorch file (.bin, .pt, .pth, .ckpt: Python pickles, which attncli never reads); save the weights with"
    " safetensors.torch.save_file":
        "是 PyTorch 文件（.bin、.pt、.pth、.ckpt：Python pickle，attncli 从不读取）；请用 safetensors.torch.save_fi"
        "le 保存权重",
    "is not a .safetensors or .npz file": "不是 .safetensors 或 .npz 文件",
    "a zip archive (an .npz, or a PyTorch file (.bin, .pt, .pth, .ckpt: Python pickles, which attncli never reads"
    "); save the weights with safetensors.torch.save_file)":
        "zip 压缩包（一个 .npz，或 PyTorch 文件（.bin、.pt、.pth、.ckpt：Python pickle，attncli 从不读取）；请用 sa"
        "fetensors.torch.save_file 保存权重）",
    "a Python pickle (a PyTorch file (.bin, .pt, .pth, .ckpt: Python pickles, which attncli never reads); save th"
    "e weights with safetensors.torch.save_file)":
        "Python pickle（PyTorch 文件（.bin、.pt、.pth、.ckpt：Python pickle，attncli 从不读取）；请用 safetensors.t"
        "orch.save_file 保存权重）",
    "a .npy file (one array): give its name alone, without file and tensor":
        ".npy 文件（一个数组）：请只写它的名字，不要 file 和 tensor",
    "not a zip archive": "不是 zip 压缩包",
    "the 100 MB a header may have": "文件头最多可有的 100 MB",
    "the {} that follow": "其后的 {}",
    "records (structured or raw bytes), not single numbers": "记录（结构化数据或原始字节），不是单个的数",
    "a member's data is damaged (its checksum differs)": "某个成员的数据已损坏（校验和不符）",
    "it is a damaged zip archive": "它是损坏的 zip 压缩包",
    "F64, F32, F16, BF16, integers and BOOL": "F64、F32、F16、BF16、整数和 BOOL",
    " or {}×{}×{} (one per head)": "，或 {}×{}×{}（每个头一个）",
    "a mapping with any of {}": "含有 {} 中任意几个的映射",
    "true, or a mapping with slopes (one per head)": "true，或含有 slopes 的映射（每个头一个）",
    "a mapping with query and key (one vector for each)": "含有 query 和 key 的映射（各一个向量）",
    "a mapping with kind (rms or layer) and any of scope, gamma, beta, eps, after_rope":
        "含有 kind（rms 或 layer）以及 scope、gamma、beta、eps、after_rope 中任意几个的映射",
    " (layout: torch leaves a vector as it is: is it a bias?)": "（布局：torch 不改变向量：它是偏置吗？）",
    "a file name ends in {}": "文件名以 {} 结尾",
    "only {} (a Python pickle, which attncli never reads); save the model again with save_pretrained(folder, safe"
    "_serialization=True)":
        "只有 {}（Python pickle，attncli 从不读取）；请用 save_pretrained(folder, safe_serialization=True) 重新保存"
        "模型",
    "positive ": "正的",
    "d_k = {} (shared by the heads)": "d_k = {}（各头共用）",
    "d_k = {} (shared by the key/value heads)": "d_k = {}（各键值头共用）",
    "d_k = {}": "d_k = {}",
    "{}·d_k = {}·{} = {} (scope projection: one per number of a token's queries; a γ per head needs scope: head)":
        "{}·d_k = {}·{} = {}（scope projection：一个词元的查询的每个数一个；每个头一个 γ 需要 scope: head）",
    "{}·d_k = {}·{} = {} (scope projection: one per number of a token's keys; a γ per head needs scope: head)":
        "{}·d_k = {}·{} = {}（scope projection：一个词元的键的每个数一个；每个头一个 γ 需要 scope: head）",
    "that is the queries' size; the keys take {}": "那是查询的大小；键需要 {}",
    "expected {}": "应为 {}",
    "{} × d_k = {} × {} (a row per query head": "{} × d_k = {} × {}（每个查询头一行",
    "{} × d_k = {} × {} (a row per key/value head": "{} × d_k = {} × {}（每个键值头一行",
    "expected {}; or d_k = {} numbers shared by them)": "应为 {}；或它们共用的 d_k = {} 个数）",
    "that is {}·d_k in one row: one γ per head is written {}), and one γ over a token's whole projection needs sc"
    "ope: projection":
        "那是把 {}·d_k 写在一行里：每个头一个 γ 应写成 {}），而对一个词元整个投影的一个 γ 需要 scope: projection",
    "that is {} × d_k: one γ per head is {}; or d_k = {} shared by them)":
        "那是 {} × d_k：每个头一个 γ 是 {}；或它们共用的 d_k = {}）",
    "has {n} numbers": "有 {} 个数",
    "is {}": "是 {}",
    "{n} rows": "{} 行",
    "{n} row": "{} 行",
    "{n} columns": "{} 列",
    "{n} column": "{} 列",
    "{n} heads": "{} 个头",
    "{n} head": "{} 个头",
    "{n} labels": "{} 个标签",
    "{n} label": "{} 个标签",
    "{n} keys": "{} 个键",
    "{n} queries": "{} 个查询",
    "{n} tokens": "{} 个词元",
    "keys": "键",
    "queries": "查询",
    " at line {}, column {}": "（第 {} 行第 {} 列）",
    "did not find expected {}": "没有找到预期的 {}",
    "found character that cannot start any token": "发现了不能作为任何记号开头的字符",
    "mapping values are not allowed here": "这里不允许出现映射的值",
    "could not find expected ':'": "没有找到预期的 ':'",
    "found unexpected end of stream": "意外地到达了流的结尾",
    "expected <block end>, but found {}": "应为块的结尾，却发现了 {}",
    "found undefined alias": "发现了未定义的别名",
    "d_k = {} (shared by the heads) or {} × d_k = {} × {}": "d_k = {}（各头共用）或 {} × d_k = {} × {}",
    "d_k = {} (shared by the key/value heads) or {} × d_k = {} × {}": "d_k = {}（各键值头共用）或 {} × d_k = {} × {}",
    " (did you mean {}?)": "（是不是 {}？）",
    " (no such file)": "（没有这个文件）",
    " ({})": "（{}）",
    "loading the model ({} of weights, read and then converted to {})": "加载模型（{} 的权重，读入后转换为 {}）",
    "the document": "文档",
    "put large matrices in .npy or CSV files and name them in the document":
        "请把大矩阵放在 .npy 或 CSV 文件中，并在文档中写出它们的名字",
    "{n} bytes": "{} 字节",
    "keys come from weights.kv_down and weights.kv_up": "键由 weights.kv_down 和 weights.kv_up 算出",
    "values come from weights.kv_down and weights.kv_up": "值由 weights.kv_down 和 weights.kv_up 算出",
    "the key projections of latent attention have no bias": "潜在注意力的键投影没有偏置",
    "the value projections of latent attention have no bias": "潜在注意力的值投影没有偏置",
    "; a name on the Hugging Face Hub is not fetched: download the folder first (hf download {} --local-dir DIR) "
    "and give DIR":
        "；不会去获取 Hugging Face Hub 上的名字：请先下载这个文件夹（hf download {} --local-dir DIR），再给出 DIR",
    "are {n} query heads": "有 {} 个查询头",
    "is one query head": "只有一个查询头",
    "{} of memory, more than the {} attncli may use ({}); {}": "{} 内存，超过了 attncli 可以使用的 {}（{}）；{}",
    "query": "查询",
    "would be at least {} pixels tall": "至少会有 {} 像素高",
    "would be {} × {} pixels": "会有 {} × {} 像素",
    "would be at least {}": "至少会有 {}",
    "would be {}": "会有 {}",
    "show less ({}), or {}": "少显示一些（{}），或{}",
    "--only KEY, --head N, or attncli heatmap for the weights": "--only KEY、--head N，或用 attncli heatmap 看权重",
    "1 to 8{} or all": "1 到 8{} 或 all",
    "score: dot and normalize: softmax": "score: dot 和 normalize: softmax",
    "keys and values": "键和值",
    "queries and values": "查询和值",
    "queries and keys": "查询和键",
    "a mapping with kv_norm (required) and query_norm (with weights.query_down)":
        "含有 kv_norm（必需）和 query_norm（与 weights.query_down 一起时）的映射",
    "a mapping with type ({}), factor and the type's parameters": "含有 type（{}）、factor 以及该类型参数的映射",
    "true, or a mapping with floor_scale and attn_scale (Llama 4's)":
        "true，或含有 floor_scale 和 attn_scale 的映射（Llama 4 的）",
    "one row (a vector is one row)": "一行（向量就是一行）",
    "tensor {} in {} is {}": "{1} 中的张量 {0} 是 {2}",
    "tensor {} in {} is {}, {} after layout: torch": "{1} 中的张量 {0} 是 {2}，按 layout: torch 转置后是 {3}",
    "a single number": "单个数",
    "{}, tensor {}": "{}，张量 {}",
}
