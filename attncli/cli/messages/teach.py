"""Chinese for the messages of writing results and of teaching (attncli.outputs, attncli.teach)."""

CATALOGUE = {
    "gives {} twice, as {} and as {}: keep one": "两次给出了 {}，分别写作 {} 和 {}：请只保留一个",
    "is a list: query: picks the row the answer is for (a number from 1, or a token); did you mean queries: for the "
    "numbers of Q?":
        "是一个列表：query: 用来选择答案对应的那一行（从 1 开始的编号，或一个词元）；"
        "你是想用 queries: 写出 Q 的数值吗？",
    "no draw of whole numbers in {} keeps every weight at or below {} for these sizes (the scores grow with d_model "
    "and d_k): try a smaller --d-model, more --heads, or a larger --max-weight":
        "在 {} 次抽取中，没有一组整数能让每个权重都不超过 {}（得分随 d_model 和 d_k 变大）：请减小 --d-model、"
        "增加 --heads，或调大 --max-weight",
    "is {}: a row over {} keys has a weight of at least 1/{}, so give {} or more":
        "是 {}：一行有 {} 个键时，至少有一个权重不小于 1/{}，所以请给出 {} 或更大的值",
    "needs --integers: it is the rule by which the whole numbers are drawn":
        "需要 --integers：它是抽取整数时遵循的规则",
    "is one of this run's input files; choose another output path": "是本次运行的输入文件之一；请另选一个输出路径",
    "is closed; nothing can be written there (write to a file with -o FILE)":
        "已关闭；无法写到那里（请用 -o FILE 写到文件）",
    "is a directory; give a file name": "是一个文件夹；请给出文件名",
    "cannot be written: the folder {} does not exist": "无法写入：文件夹 {} 不存在",
    "cannot be written ({})": "无法写入（{}）",
    "is the document read from standard input; choose another output path":
        "是从标准输入读取的文档；请另选一个输出路径",
    "cannot be written (the system accepted no more bytes)": "无法写入（系统不再接受更多字节）",
    "cannot be written (no copy of the old file could be kept: {})": "无法写入（无法保留旧文件的副本：{}）",
    "'{}' was not computed for this document": "本文档没有计算 '{}'",
    "unknown key {} (expected a key of the JSON, such as queries, keys, values, scores, weights, output or weight"
    "_query, or a formula's name, such as Q, K, V, S, Z, A, H, Y, W_Q or b_Q; attncli compute --help lists them a"
    "ll)":
        "未知的键 {}（应为 JSON 中的键，例如 queries、keys、values、scores、weights、output 或 weight_query，或公式"
        "中的名字，例如 Q、K、V、S、Z、A、H、Y、W_Q 或 b_Q；attncli compute --help 列出了全部）",
    "'{}' is not in a result whose queries, keys and values are given directly: there is no {}":
        "'{}' 不在直接给出查询、键和值的结果中：没有 {}",
    "'{}' was not kept by this computation": "这次计算没有保留 '{}'",
    "{} is neither a {} number nor a label ({})": "{} 既不是{}编号，也不是标签（{}）",
    "expected a mapping with any of {}": "应为含有 {} 中任意几个的映射",
    "gives no result to check: add any of {}": "没有给出要检查的结果：请加上 {} 中的任意几个",
    "{} is out of range: {} are 1 to {}": "{} 超出范围：{}的编号是 1 到 {}",
    "{} is out of range: heads are 1 to {}": "{} 超出范围：头的编号是 1 到 {}",
    "{} is out of range: {} are 1 and 2": "{} 超出范围：{}的编号是 1 和 2",
    "{} is out of range: heads are 1 and 2": "{} 超出范围：头的编号是 1 和 2",
    "{} is out of range: there is one head, head 1": "{} 超出范围：只有一个头，即头 1",
    "{} is out of range: there is one query, query 1": "{} 超出范围：只有一个查询，即查询 1",
    "needs {} in the document: without it there are no {}": "需要文档中的 {}：没有它就没有 {}",
    "the tolerance must be a finite number ≥ 0, not {}": "容差必须是 ≥ 0 的有限数，而不是 {}",
    "the page needs the scores and weights, and this result was computed without them (streamed, or only some sta"
    "ges): compute it in full, as attncli.compute does":
        "页面需要得分和权重，而这个结果计算时没有保留它们（分块流式计算，或只算了部分阶段）：请像 attncli.compute "
        "那样完整计算",
    "d_model {} is not divisible by {} heads; give --d-k (the width of each head) or a --d-model that divides":
        "d_model {} 不能被 {} 个头整除；请给出 --d-k（每个头的宽度）或能整除的 --d-model",
    "turns pairs of dimensions, so each head needs an even width, but d_k = {}; give an even --d-k":
        "按维度对旋转，所以每个头的宽度必须是偶数，但 d_k = {}；请给出偶数的 --d-k",
    "needs as many keys as queries, but --context {} gives {} keys for {} tokens":
        "需要键和查询一样多，但 --context {0} 为 {2} 个词元给出了 {1} 个键",
    "{} does not divide --heads {}: each key/value head serves the same number of query heads":
        "{} 不能整除 --heads {}：每个键值头服务的查询头数必须相同",
    "is empty; give the words (split on spaces) or characters to label":
        "是空的；请给出要作标签的词（按空格分开）或字符",
    "is {} but --tokens gives {} tokens ({})": "是 {}，但 --tokens 给出了 {} 个词元（{}）",
    "would write more than {} numbers; leave out --inline for seeded random specs":
        "会写出超过 {} 个数；对带种子的随机矩阵请去掉 --inline",
    "{} is not a whole number ≥ 0": "{} 不是 ≥ 0 的整数",
    "{} is too large: the seeds of the matrices must stay below 2^63, so at most {}":
        "{} 太大：矩阵的种子必须小于 2^63，所以最多为 {}",
    "is not valid UTF-8 text": "不是有效的 UTF-8 文本",
    "a {} matrix is too large to generate (more than 2^31 numbers)": "{} 矩阵太大，无法生成（超过 2^31 个数）",
    "stage {} ({}): {} overflow float64; the numbers in the document are too large for this comparison":
        "阶段 {}（{}）：{} 超出了 float64 的范围；文档中的数太大，无法做这个比较",
}
