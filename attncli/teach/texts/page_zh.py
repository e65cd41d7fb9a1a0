"""页面（``attncli page``）上 explain 之外的文字：按钮、标题和说明（中文）。"""

PAGE = {
    "lang_name": "中文",
    "title": "这次注意力计算的每一个数",
    "intro": "点击任意一个数，或者用 Tab 键和方向键移到它上面再按回车：会打开一个面板，"
             "用这份文档里的数写出它是怎么来的。把指针放在一个词元上，它在每张表里的行和列都会亮起来。",
    "heads": "注意力头",
    "all_heads": "全部",
    "head": "第 {h} 个头",
    "switch_lang": "English",
    "switch_lang_label": "用英文显示页面",
    "theme_dark": "深色",
    "theme_light": "浅色",
    "theme_label": "在浅色和深色主题之间切换",
    "path": "逐步讲解",
    "path_intro": "attncli explain 的八个步骤，一次一步，针对这里选中的查询和注意力头。",
    "query": "查询",
    "previous": "上一步",
    "next": "下一步",
    "goto": "查看对应的表格",
    "close": "关闭",
    "value": "{table}，第 {row} 行，第 {column} 列：{value}",
    "masked_value": "{table}，第 {row} 行，第 {column} 列：已屏蔽",
    "shown": "这里显示了 {n} 行中的 {rows} 行、{m} 列中的 {columns} 列：大矩阵只显示开头和结尾"
             "（attncli compute --full 会全部显示）。",
    "no_lines": "和 attncli explain 一样，面板只写出一行中前 12 个键的算式；这个键排在它们之后。",
    "not_worked": "这个页面只写出了 {count} 组（查询，头）的步骤（再多，大文档的页面就要写很久）；这个数请运行 "
                  "attncli explain FILE --head {head} --query {query}。",
    "given": "这个数来自文档本身，不需要计算。",
    "legend": "权重，以及每张表里从最小到最大的得分：颜色越深，数越大；被屏蔽的格子画有斜线。",
    "tables": "表格",
    # the tables explain has no name for (explain's own names are in texts/zh.py's "label")
    "names": {"rope_frequencies": "旋转频率", "rope_attention_factor": "旋转注意力系数",
              "query_temperature": "查询温度", "sink_weights": "汇（sink）所占份额", "lse": "对数求和指数",
              "kernel_queries": "核所用的查询", "kernel_keys": "核所用的键",
              "weight_query": "查询投影", "bias_query": "查询偏置", "weight_key": "键投影", "bias_key": "键偏置",
              "weight_value": "值投影", "bias_value": "值偏置", "weight_gate": "门控投影", "bias_gate": "门控偏置",
              "weight_output": "输出投影", "bias_output": "输出偏置"},
}
