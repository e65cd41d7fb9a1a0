"""Chinese for the messages of reading and checking model folders (attncli.models)."""

CATALOGUE = {
    "the model failed to run on the sentence ({})": "模型在这个句子上运行失败（{}）",
    "the checkpoint has no tensor for the model's {}": "检查点中没有模型的 {} 对应的张量",
    "is empty; give the sentence to run the model on": "是空的；请给出让模型运行的句子",
    "{} is not float64 or float32": "{} 既不是 float64 也不是 float32",
    "{} is out of range: this {} model's {} are 0 to {}": "{} 超出范围：这个 {} 模型的 {} 是 0 到 {}",
    "gives no tokens with this model's tokenizer": "用这个模型的分词器得不到任何词元",
    "is {} tokens long, more than the {} positions of this model": "长度为 {} 个词元，超过了这个模型的 {} 个位置",
    "tensor {} is {} in the checkpoint but {} in the model": "张量 {} 在检查点中是 {}，在模型中却是 {}",
    "the document gives {} of shape {}, the model {} (a bug of extract for this model)":
        "文档给出的 {} 形状为 {}，模型的是 {}（这是 extract 对这个模型的一个缺陷）",
    "the document does not reproduce the model: {} differs by {} from {} (more than {}); nothing was written":
        "文档没有重现模型：{0} 与 {2} 相差 {1}（超过 {3}）；没有写出任何东西",
    "cannot be read as a {} config ({})": "无法作为 {} 配置读取（{}）",
    "position_embedding_type {} is not supported (absolute positions only)":
        "不支持 position_embedding_type {}（只支持绝对位置）",
    "RoPE turns {} of the {} dimensions of a head; only full rotary is supported here":
        "RoPE 只旋转一个头的 {1} 个维度中的 {0} 个；这里只支持全部旋转",
    "apply_residual_connection_post_layernorm adds the normalised inputs back, not the inputs; that residual is n"
    "ot supported":
        "apply_residual_connection_post_layernorm 加回的是归一化后的输入而不是输入本身；不支持这种残差",
    "model_type {} is not supported; extract knows {}": "不支持 model_type {}；extract 认识的有 {}",
    "rope_type {} of the {} layers is not default or proportional":
        "{1} 层的 rope_type {0} 既不是 default 也不是 proportional",
    "use_bidirectional_attention lets every token see the later ones, which a causal mask cannot write":
        "use_bidirectional_attention 让每个词元都能看到后面的词元，因果掩码写不出这一点",
    "layer {} makes no keys or values: it reuses layer {}'s (kv sharing, num_kv_shared_layers: {}); extract layer {}, "
    "or write both as a stack with kv_from":
        "第 {0} 层不生成键和值：它复用第 {1} 层的（KV 共享，num_kv_shared_layers: {2}）；"
        "请提取第 {3} 层，或把两层写成带 kv_from 的堆叠",
    "{} is not encoder or decoder": "{} 既不是 encoder 也不是 decoder",
    "only T5 has a decoder stack besides its encoder; a {} model has one stack":
        "只有 T5 在编码器之外还有解码器栈；{} 模型只有一个栈",
    "rope_type {} is not one of default, {}": "rope_type {} 不是 default、{} 之一",
    "use_bidirectional_attention lets every layer see the later tokens inside its window, which the document's ma"
    "sk cannot write (a window is causal)":
        "use_bidirectional_attention 让每一层都能看到窗口内后面的词元，文档的掩码写不出这种情况（窗口是因果的）",
    "rope_type {} scales cos and sin by {}; only RoPE types without that scale are supported":
        "rope_type {} 用 {} 缩放 cos 和 sin；这里只支持不带这种缩放的 RoPE 类型",
    "RoPE turns {} dimensions of heads of {}": "RoPE 旋转的是 {} 个维度，而头宽为 {}",
    "a fused Wqkv with a bias is not supported": "不支持带偏置的融合 Wqkv",
    "hidden_act {} is the activation of {}; a linear: document takes SiLU":
        "hidden_act {} 是{}的激活函数；linear: 文档只接受 SiLU",
    "rope_parameters turn {} of the {} dimensions of a head, but MiniMax's rotary module turns {}":
        "rope_parameters 旋转一个头的 {1} 个维度中的 {0} 个，而 MiniMax 的旋转模块旋转的是 {2} 个",
    "qk_rope_head_dim is {}: latent attention shares an even number (at least 2) of each key's numbers across heads":
        "qk_rope_head_dim 是 {}：潜在注意力中每个键由所有头共享的部分须是偶数个数（至少 2 个）",
    "hidden_act {} is the activation of q, k and v; a lightning document takes silu, sigmoid or none":
        "hidden_act {} 是 q、k、v 的激活函数；lightning 文档只接受 silu、sigmoid 或 none",
    "qk_layernorm with a bias per head is not supported": "不支持每个头带偏置的 qk_layernorm",
    "num_key_value_heads differs from num_attention_heads; latent attention expands keys and values for every que"
    "ry head":
        "num_key_value_heads 与 num_attention_heads 不同；潜在注意力会为每个查询头展开键和值",
    "the folder name is empty: give the model's folder (with config.json, .safetensors weights and the tokenizer "
    "files)":
        "文件夹名是空的：请给出模型的文件夹（含 config.json、.safetensors 权重和分词器文件）",
    "no such folder: extract reads a model folder on this machine (config.json, .safetensors weights, tokenizer f"
    "iles) and never downloads one{}":
        "没有这个文件夹：extract 读取本机上的模型文件夹（config.json、.safetensors 权重、分词器文件），从不下载{}",
    "is not a folder: give the model's folder (with config.json, .safetensors weights and the tokenizer files)":
        "不是文件夹：请给出模型的文件夹（含 config.json、.safetensors 权重和分词器文件）",
    "has no config.json: not a model folder in the Hugging Face layout":
        "没有 config.json：不是 Hugging Face 布局的模型文件夹",
    "is not a JSON object": "不是 JSON 对象",
    "is not a regular file (a named pipe, device or socket): extract reads only the regular files of a model fold"
    "er":
        "不是普通文件（而是命名管道、设备或套接字）：extract 只读取模型文件夹中的普通文件",
    "has no .safetensors weights: it holds {}": "没有 .safetensors 权重：它存放的是 {}",
    "is named by the index but missing": "索引中列出了它，但它不存在",
    "needs transformers {} or later, and {} is installed: pip install -U 'attncli[models]'":
        "需要 transformers {} 或更新的版本，而安装的是 {}：pip install -U 'attncli[models]'",
    "has no tokenizer: none of {}": "没有分词器：{} 一个都没有",
    "is larger than {} MiB: not a model's JSON file": "大于 {} MiB：不是模型的 JSON 文件",
    "cannot be read as JSON ({})": "无法作为 JSON 读取（{}）",
    "is not a .safetensors file (its header cannot be read)": "不是 .safetensors 文件（无法读取其文件头）",
    "needs PyTorch and Hugging Face transformers, and {} is not installed: {}":
        "需要 PyTorch 和 Hugging Face transformers，但 {} 没有安装：{}",
    "its tokenizer cannot be loaded from the folder ({})": "无法从文件夹加载它的分词器（{}）",
    "is not an index of safetensors shards (a JSON object with a weight_map)":
        "不是 safetensors 分片的索引（带 weight_map 的 JSON 对象）",
    "has no {} (nor {}), the weights transformers loads; it has {}{}: rename the file":
        "没有 {}（也没有 {}），即 transformers 加载的权重；它有的是 {}{}：请重命名这个文件",
    "the checkpoint has no tensor for {}{}, which transformers would make up at random":
        "检查点中没有 {}{} 对应的张量，transformers 会随机生成它",
    "the model cannot be loaded from the folder ({})": "无法从文件夹加载模型（{}）",
}
