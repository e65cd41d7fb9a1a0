"""Chinese for the messages of stacked documents (layers:, --layer)."""

CATALOGUE = {
    "is a stack of {} layers (layers:); this command shows one: choose it with --layer N (1 … {})":
        "是由 {} 层组成的堆叠（layers:）；这个命令只显示一层：请用 --layer N（1 … {}）选择",
    "emulates one layer's kernel: choose the layer with --layer N": "模拟的是一层的内核：请用 --layer N 选择那一层",
    "writes one layer's matrices: choose the layer with --layer N": "写出的是一层的矩阵：请用 --layer N 选择那一层",
    "a .npy file holds one array: choose the layer with --layer N and the array with --only, or write a .npz":
        "一个 .npy 文件只存放一个数组：请用 --layer N 选择层、用 --only 选择数组，或写成 .npz",
    "a stack of layers has no backward pass here (gradient: is refused in a stacked document): there is no dZ to "
    "explain": "堆叠的各层在这里没有反向计算（堆叠文档不接受 gradient:）：没有 dZ 可以讲解",
    "a stack of layers has no backward pass here (gradient: is refused in a stacked document): there is no "
    "gradient to draw": "堆叠的各层在这里没有反向计算（堆叠文档不接受 gradient:）：没有梯度可以画",
    "{} (layers[{}], layer {}, of {} has none)": "{0}（{3} 的 layers[{1}]，即第 {2} 层，没有它）",
    "makes a stack of layers, which attncli compute FILE computes (or one layer of it with --layer N); this takes"
    " a one-layer document":
        "构成一个层的堆叠，要用 attncli compute FILE 计算（或用 --layer N 计算其中一层）；这里需要单层的文档",
    "computed no output to pass on to the next layer": "没有算出可传给下一层的输出",
    "{} is a one-layer document (it has no layers:); leave out --layer":
        "{} 是单层的文档（没有 layers:）；请去掉 --layer",
    "is {} but {} has {} layer{} (choose 1 … {})": "是 {0}，但 {1} 只有 {2} 层（请在 1 … {4} 中选择）",
    "is {}; expected a list of one or more layer mappings": "是 {}；应为由一个或多个层映射组成的列表",
    "is required: the first layer's X, n × d_model": "必须给出：第一层的 X，n × d_model",
    "is a key of each layer in a stacked document: move it into the layers' mappings":
        "在堆叠的文档中是每一层的键：请把它移到各层的映射中",
    "is {}; expected a mapping (a layer's keys)": "是 {}；应为映射（一层的键）",
    "the tokens are given once, at the top of a stacked document": "词元只在堆叠文档的顶层给出一次",
    "a layer's inputs are the output of the layer before it (the first layer's are the top-level inputs)":
        "一层的输入是前一层的输出（第一层的输入是顶层的 inputs）",
    "positions are given once, at the top of a stacked document": "位置只在堆叠文档的顶层给出一次",
    "positional is added once, to the first layer's inputs: give it at the top":
        "positional 只加一次，加到第一层的输入上：请在顶层给出",
    "a layer of a stack computes its queries from its inputs": "堆叠中的一层由它的输入算出查询",
    "a layer of a stack computes its keys from its inputs": "堆叠中的一层由它的输入算出键",
    "a layer of a stack computes its values from its inputs": "堆叠中的一层由它的输入算出值",
    "layers do not nest": "各层不能嵌套",
    "attncli has no backward pass through a stack of layers; leave gradient out":
        "attncli 没有穿过层堆叠的反向传播；请去掉 gradient",
    "holds {} layers; a stack has at most {} (the deepest models have about 130)":
        "含有 {} 层；一个堆叠最多 {} 层（最深的模型约有 130 层）",
}
