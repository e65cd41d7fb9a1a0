"""Chinese for the messages raised from a variable (an errno's reason, a refused model type, a picture's size)."""

CATALOGUE = {
    "no such file (a symbolic link to a missing file)": "没有这个文件（指向不存在的文件的符号链接）",
    "is a loop of symbolic links (or too many links in a row)": "是符号链接的循环（或一连串的链接太多）",
    "no such file (a part of its path is a file, not a folder)":
        "没有这个文件（路径中的某一部分是文件，而不是文件夹）",
    "the file name is too long": "文件名太长",
    "Kimi K2's config (model_type kimi_k2) and its tiktoken tokenizer load only with the folder's own Python code"
    ", which extract never runs; a copy of the folder whose config.json says model_type deepseek_v3 (its architec"
    "ture) and whose tokenizer loads without remote code is read as DeepSeek V3":
        "Kimi K2 的配置（model_type kimi_k2）和它的 tiktoken 分词器只能靠文件夹自带的 Python 代码加载，而 extract "
        "从不运行这些代码；把文件夹复制一份，让其 config.json 写 model_type deepseek_v3（它的架构），并让分词器无需"
        "远程代码即可加载，这份副本就会按 DeepSeek V3 读取",
    "no such file": "没有这个文件",
    "the picture {} ({} lines of text), more than a PNG may be ({} pixels a side, {} million in all){}":
        "图片{}（{} 行文字），超过了 PNG 的上限（每边 {} 像素，总共 {} 百万像素）{}",
    "the picture {} lines long, more than a picture may be ({} lines){}": "图片{} 行长，超过了图片的上限（{} 行）{}",
}
