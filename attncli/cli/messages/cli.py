"""Chinese for the messages of the command line's own checks (attncli.cli)."""

CATALOGUE = {
    "--against and --dtype go together: the kernel's result, and the precision it computed in":
        "--against 和 --dtype 要一起给出：内核的结果，以及它计算时用的精度",
    "{} needs gradient: in the document (the dO the kernel used)": "{} 需要文档中的 gradient:（内核用到的 dO）",
    "has no 'answer:' section to check (see attncli check --help)":
        "没有可检查的 'answer:' 部分（见 attncli check --help）",
    "unknown step {}: the steps are {}": "未知的步骤 {}：步骤有 {}",
    "{} is neither a query number (1 to {}) nor a token ({})": "{} 既不是查询编号（1 到 {}），也不是词元（{}）",
    "--head {} is out of range: this document has heads 1 to {}": "--head {} 超出范围：本文档的头是 1 到 {}",
    "--head {} is out of range: this document has heads 1 and 2": "--head {} 超出范围：本文档的头是 1 和 2",
    "--head {} is out of range: this document has one head, head 1": "--head {} 超出范围：本文档只有一个头，即头 1",
    "the residual is part of step add_norm here (R = X + Y, then LayerNorm); the steps here are {}":
        "这里的残差属于步骤 add_norm（R = X + Y，然后做 LayerNorm）；这里的步骤有 {}",
    "'{}' needs {} in the document; the steps here are {}": "'{}' 需要文档中的 {}；这里的步骤有 {}",
    "--head {} is out of range: heads count from 1": "--head {} 超出范围：头从 1 开始编号",
    "'{}' needs {} in the document": "'{}' 需要文档中的 {}",
    "{} is out of range: the steps are {}": "{} 超出范围：步骤有 {}",
    "{} is out of range: queries count from 1": "{} 超出范围：查询从 1 开始编号",
    "{} is out of range: this document has queries 1 to {}": "{} 超出范围：本文档的查询是 1 到 {}",
    "{} is out of range: this document has queries 1 and 2": "{} 超出范围：本文档的查询是 1 和 2",
    "{} is out of range: this document has one query, query 1": "{} 超出范围：本文档只有一个查询，即查询 1",
    "names no matrix ({} come with every JSON); name one, e.g. --only weights":
        "没有指定矩阵（每个 JSON 都带有 {}）；请指定一个，例如 --only weights",
    "writes one matrix: name it with one --only, e.g. --only weights":
        "只写出一个矩阵：请用一个 --only 指定它，例如 --only weights",
    "--emulate gives {} (the last three with gradient:), not {}":
        "--emulate 给出的是 {}（后三个需要 gradient:），而不是 {}",
    "--head selects tables; for JSON pick a head with jq, e.g. jq '.weights[0]'":
        "--head 用来选择表格；要在 JSON 中选一个头请用 jq，例如 jq '.weights[0]'",
    "a .npy file holds one array: choose it with --only, e.g. --only output":
        "一个 .npy 文件只存放一个数组：请用 --only 选择它，例如 --only output",
    "'{}' has no heads; leave out --head": "'{}' 没有头；请去掉 --head",
    "shows its own stages (a to e); leave out --step": "显示的是它自己的阶段（a 到 e）；请去掉 --step",
    "gives queries, keys and values directly, and explain starts from the inputs X: attncli compute shows every n"
    "umber of it":
        "直接给出了查询、键和值，而 explain 从输入 X 讲起：attncli compute 会显示它的每一个数",
    "the document is YAML: give a name ending in .yaml (its inputs go beside it, as .npy)":
        "文档是 YAML：请给出以 .yaml 结尾的名字（它的输入以 .npy 放在旁边）",
    "is missing: give the sentence with --text TEXT, or --text-file FILE (- for standard input)":
        "缺少：请用 --text TEXT 或 --text-file FILE（- 表示标准输入）给出句子",
    "and --text both give the sentence; give one of them": "与 --text 都给出了句子；请只给一个",
    "needs score_bias: in the document (it has no score bias to draw)":
        "需要文档中的 score_bias:（它没有可画的得分偏置）",
    "needs differential: in the document (it has no pairs of heads to combine)":
        "需要文档中的 differential:（它没有可以合并的头对）",
    "{} needs gradient: in the document (the backward pass's seed)": "{} 需要文档中的 gradient:（反向传播的种子）",
    "{} is not a head number (1, 2, …) or all": "{} 不是头的编号（1, 2, …）或 all",
    "{} contradicts -o {}, whose extension {} means {}; leave out --format, or give -o a name that ends otherwise":
        "{} 与 -o {} 矛盾，它的扩展名 {} 表示 {}；请去掉 --format，或给 -o 一个别的扩展名",
    "{} is not none, causal or a mask file{}": "{} 不是 none、causal 或掩码文件{}",
    "expected a file name ending in .html or .htm (the page is HTML)":
        "应为以 .html 或 .htm 结尾的文件名（页面是 HTML）",
    "the page is a whole HTML file: write it with -o page.html, then open that in a browser":
        "页面是一个完整的 HTML 文件：请用 -o page.html 写出，然后在浏览器中打开",
    "already exists; give --force to replace it, or choose another name":
        "已经存在；请用 --force 替换它，或另选一个名字",
    "expected a file name ending in .svg, .png, .html or .txt": "应为以 .svg、.png、.html 或 .txt 结尾的文件名",
    "saves tables as the terminal shows them, and -o {} writes arrays instead":
        "按终端显示的样子保存表格，而 -o {} 写出的是数组",
    "works with --format table only (it saves the tables as the terminal shows them)":
        "只能与 --format table 一起使用（它按终端显示的样子保存表格）",
    "is the same file as --output; choose another name": "与 --output 是同一个文件；请另选一个名字",
    # the fixed messages of cli/run.py and cli/main.py
    "ran out of memory (the input is larger than this process may allocate); use a smaller input, or set {} to what "
    "attncli may use, so that it computes large results block by block":
        "内存不足（输入超过了这个进程能分配的内存）；请用更小的输入，"
        "或把 {} 设为 attncli 可以使用的内存，让它分块计算大的结果",
    "attncli needs about {} of memory to start (Python, numpy and OpenBLAS's buffers), more than the {} that {} "
    "allows; raise that limit":
        "attncli 启动需要约 {0} 内存（Python、numpy 和 OpenBLAS 的缓冲区），超过了 {2} 允许的 {1}；请提高这个限制",
    "Interrupted.": "已中断。",
    "Stopped by {}.": "被 {} 停止。",
}
