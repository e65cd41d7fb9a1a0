"""Chinese for the messages of reading matrix, text, .npy, .safetensors and .npz files (attncli.inputs)."""

CATALOGUE = {
    "is required next to tensor: the .safetensors or .npz file that holds it":
        "与 tensor 一起必须给出：存放它的 .safetensors 或 .npz 文件",
    "expected a file name, not {}": "应为文件名，而不是 {}",
    "is an empty file name; give the .safetensors or .npz file that holds the tensor":
        "是空的文件名；请给出存放该张量的 .safetensors 或 .npz 文件",
    "{} {}": "{} {}",
    "is required: the name of one array in {}": "必须给出：{} 中某一个数组的名字",
    "expected the array's name (text), not {}": "应为数组的名字（文本），而不是 {}",
    "is not a regular file (a device, pipe or socket)": "不是普通文件（而是设备、管道或套接字）",
    "no tensor {} in {}, which holds {}{}": "{1} 中没有张量 {0}，它存放的是 {2}{3}",
    "expected [start, stop], two whole numbers (from 0, stop excluded), not {}":
        "应为 [start, stop]，两个整数（从 0 数起，不含 stop），而不是 {}",
    "[{}, {}] is no range: it needs 0 ≤ start < stop (counted from 0, stop excluded)":
        "[{}, {}] 不是有效范围：需要 0 ≤ start < stop（从 0 数起，不含 stop）",
    "permission denied": "没有权限",
    "cannot be read ({})": "无法读取（{}）",
    "{} is not rows (as stored) or torch (an nn.Linear.weight, transposed)":
        "{} 既不是 rows（按存储方式）也不是 torch（nn.Linear.weight，需转置）",
    "{} ({}); expected 1 to 3 axes, not empty": "{}（{}）；应有 1 到 3 个轴，且不能为空",
    "{} ({}); a batch's arrays have 1 to 4 axes, none empty": "{}（{}）；批次的数组应有 1 到 4 个轴，且都不能为空",
    "is nested {} lists deep; a batch's arrays have at most 4 axes": "嵌套了 {} 层列表；批次的数组最多有 4 个轴",
    "holds an array of shape {}; a batch's arrays have 1 to 4 axes, none empty":
        "存放的数组形状为 {}；批次的数组应有 1 到 4 个轴，且都不能为空",
    "torch transposes a 2-D nn.Linear weight, but {}": "torch 会转置二维的 nn.Linear 权重，但 {}",
    "rows and columns cut a matrix, but {}": "rows 和 columns 用来截取矩阵，但 {}",
    "a vector is one row: cut its entries with columns": "向量就是一行：请用 columns 截取它的元素",
    "no tensor {} in {}: it holds no tensors": "{1} 中没有张量 {0}：其中没有任何张量",
    "no tensor {} in {}; nearest: {}": "{1} 中没有张量 {0}；最接近的：{2}",
    "[{}, {}] goes beyond its {}: {} ({} count from 0, stop excluded)":
        "[{}, {}] 超出了它的 {}：{}（{} 从 0 数起，不含 stop）",
    "expected a matrix (a list of rows), a file name or {{random: …}}, not {}":
        "应为矩阵（由行组成的列表）、文件名或 {{random: …}}，而不是 {}",
    "holds a value that is not a number": "含有一个不是数的值",
    "expected none, causal, a matrix (a list of rows) or a file name, not {}":
        "应为 none、causal、矩阵（由行组成的列表）或文件名，而不是 {}",
    "{}: {}": "{}：{}",
    "is nested {} lists deep; a matrix has at most 3 axes (heads, rows, columns)":
        "嵌套了 {} 层列表；矩阵最多有 3 个轴（头、行、列）",
    "is an empty file name; give the matrix, or the name of a file that holds it (.npy, .csv, …)":
        "是空的文件名；请给出矩阵，或存放它的文件名（.npy、.csv 等）",
    "holds named arrays; name one: {{file: {}, tensor: NAME}}":
        "含有多个命名数组；请指定一个：{{file: {}, tensor: NAME}}",
    "{} is neither a matrix nor a file name ending in {}": "{} 既不是矩阵，也不是以 {} 结尾的文件名",
    "holds {}; expected a matrix of numbers": "存放的是 {}；应为由数组成的矩阵",
    "holds bool values; booleans belong only in a mask (save numbers for inputs and weights)":
        "存放的是布尔值；布尔值只能用于掩码（输入和权重请存为数）",
    "{}: {} is not a finite number": "{}：{} 不是有限的数",
    "{}: {} {}": "{}：{} {}",
    "is not a readable .npy file: it holds Python objects (pickles are refused)":
        "不是可读的 .npy 文件：它存放的是 Python 对象（拒绝读取 pickle）",
    "holds {}; expected real numbers (int or float)": "存放的是 {}；应为实数（int 或 float）",
    "is not a readable .npy file: its header gives the shape ({})": "不是可读的 .npy 文件：其文件头给出的形状是（{}）",
    "holds an array of shape {}; expected 1 to 3 axes, not empty": "存放的数组形状为 {}；应有 1 到 3 个轴，且不能为空",
    "is not a readable .npy file: its header promises {} {} ({}) but the file holds {} of data (cut short or forg"
    "ed)":
        "不是可读的 .npy 文件：其文件头声明 {} {}（{}），但文件只有 {} 的数据（被截断或伪造）",
    "{}: {} is not a mask value (1 = may attend, 0 = masked)": "{}：{} 不是掩码值（1 = 可以关注，0 = 被掩盖）",
    "a mask cannot be random; give 'causal', a matrix or a file": "掩码不能随机生成；请给出 'causal'、矩阵或文件",
    "is empty": "是空的",
    "holds an empty row": "含有一个空行",
    "{}: {} where a list belongs (rows must all be lists)": "{}：在应为列表的位置出现了 {}（每一行都必须是列表）",
    "{} is empty": "{} 是空的",
    "is a .npz archive (several arrays), not a .npy file; save one array with np.save":
        "是 .npz 压缩包（含多个数组），不是 .npy 文件；请用 np.save 保存单个数组",
    "is not a readable .npy file: it does not start with the .npy signature (\\x93NUMPY)":
        "不是可读的 .npy 文件：它不以 .npy 签名（\\x93NUMPY）开头",
    "{}: a list where a number belongs": "{}：在应为数的位置出现了列表",
    "{} has {} entries but the first has {} (ragged rows)": "{} 有 {} 个元素，但第一行有 {} 个（各行长短不一）",
    "is not a readable .npy file: its data ends early (the file was {} bytes when its header was read: was it cut"
    " short or rewritten while attncli read it?)":
        "不是可读的 .npy 文件：数据提前结束（读取文件头时文件为 {} 字节：是在 attncli 读取时被截断或改写了吗？）",
    "is not a readable .npy file: its header cannot be read ({})": "不是可读的 .npy 文件：无法读取其文件头（{}）",
    "is not a .safetensors file: it is {}": "不是 .safetensors 文件：它是 {}",
    "is not a readable .safetensors file: BOOL tensor {} holds a byte that is not 0 or 1":
        "不是可读的 .safetensors 文件：BOOL 张量 {} 含有一个既不是 0 也不是 1 的字节",
    "is not a .safetensors file: it has {} bytes, fewer than the 8 of its header length":
        "不是 .safetensors 文件：它只有 {} 字节，不足文件头长度所需的 8 字节",
    "is not a .safetensors file (or is cut short): its first 8 bytes give a header of {}, more than {}":
        "不是 .safetensors 文件（或已被截断）：前 8 个字节给出的文件头长度为 {}，超过了 {}",
    "is not a .safetensors file: its header is not a JSON object": "不是 .safetensors 文件：其文件头不是 JSON 对象",
    "{} lacks dtype, shape or data_offsets": "{} 缺少 dtype、shape 或 data_offsets",
    "{} has a dtype that is not text": "{} 的 dtype 不是文本",
    "tensor {} holds {} values, which attncli does not read ({}); convert it to one of them":
        "张量 {} 存放的是 {} 类型的值，attncli 不读取这种类型（{}）；请转换为其中之一",
    "{} has a shape that is not a list of sizes": "{} 的 shape 不是由各维大小组成的列表",
    "{} has data_offsets that are not [begin, end] with 0 ≤ begin ≤ end":
        "{} 的 data_offsets 不是满足 0 ≤ begin ≤ end 的 [begin, end]",
    "is not a readable .safetensors file: tensor {} is {} {} ({}) but its data_offsets span {}":
        "不是可读的 .safetensors 文件：张量 {} 为 {} {}（{}），但其 data_offsets 跨越了 {}",
    "is not a readable .safetensors file: tensor {} ends at byte {} but the file has {} (cut short?)":
        "不是可读的 .safetensors 文件：张量 {} 结束于第 {} 字节，但文件只有 {}（被截断了？）",
    "is not a readable .safetensors file: tensor {}'s data ends early (the file was {} bytes when its header was "
    "read: was it cut short or rewritten while attncli read it?)":
        "不是可读的 .safetensors 文件：张量 {} 的数据提前结束（读取文件头时文件为 {} 字节：是在 attncli 读取时被截"
        "断或改写了吗？）",
    "is not a .npz archive (a zip of .npy files, as numpy.savez writes): it is {}":
        "不是 .npz 压缩包（numpy.savez 写出的由 .npy 文件组成的 zip）：它是 {}",
    "{} holds Python objects (pickles are refused)": "{} 存放的是 Python 对象（拒绝读取 pickle）",
    "array {} in {} holds {}; expected real numbers": "{1} 中的数组 {0} 存放的是 {2}；应为实数",
    "{} has a header with a negative size": "{} 的文件头给出了负的大小",
    "{} promises {} {} ({}) in a member of {} (cut short or forged)":
        "{0} 在 {4} 的一个成员中声明 {1} {2}（{3}）（被截断或伪造）",
    "{}'s data ends early": "{} 的数据提前结束",
    "is not a readable .safetensors file: its header is not valid JSON":
        "不是可读的 .safetensors 文件：其文件头不是有效的 JSON",
    "is not a readable .npz archive: {}": "不是可读的 .npz 压缩包：{}",
    "is not a readable .npz archive: it is compressed in a way Python's zipfile cannot read":
        "不是可读的 .npz 压缩包：其压缩方式是 Python 的 zipfile 无法读取的",
    "is not a readable .npz archive: array {} is encrypted": "不是可读的 .npz 压缩包：数组 {} 已加密",
    "is not a readable .npz archive: array {}'s compressed data is damaged":
        "不是可读的 .npz 压缩包：数组 {} 的压缩数据已损坏",
    "{} has a header that cannot be read": "{} 的文件头无法读取",
    "holds no numbers (the file is empty)": "不含任何数（文件是空的）",
    "{} is not a finite number (NaN and infinities are not allowed)": "{} 不是有限的数（不允许 NaN 和无穷大）",
    "{}: {} is not a number{}": "{}：{} 不是数{}",
    "line {} has {} but line {} has {} (ragged rows)": "第 {} 行有 {}，但第 {} 行有 {}（各行长短不一）",
    "{} is too large for float64 (about ±1.8e308 at most)": "{} 太大，超出了 float64 的范围（最多约 ±1.8e308）",
    "line {}, column {}: {} is too large for float64 (about ±1.8e308 at most)":
        "第 {} 行第 {} 列：{} 太大，超出了 float64 的范围（最多约 ±1.8e308）",
    "{}: empty cell": "{}：空单元格",
    "{}: {} is not a mask value (1/true = may attend, 0/false = masked)":
        "{}：{} 不是掩码值（1/true = 可以关注，0/false = 被掩盖）",
}
