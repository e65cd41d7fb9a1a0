"""Chinese for the messages of the ``differential`` key (differential attention: attncli.inputs.differential)."""

CATALOGUE = {
    "takes the heads in pairs (head p with head p + h/2), but heads is {}, an odd number":
        "把头两两配对（头 p 与头 p + h/2），但 heads 是 {}，是奇数",
    "subtracts one softmax from another, but this document has normalize: {} (differential attention needs "
    "normalize: softmax)":
        "用一个 softmax 减去另一个，但这个文档的 normalize 是 {}（差分注意力需要 normalize: softmax）",
    "gives λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init = {} for head pair {} (not a finite number: λ_q·λ_k is too "
    "large for e^x)":
        "对头对 {1} 给出 λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init = {0}（不是有限数：λ_q·λ_k 太大，e^x 溢出）",
    "needs lambda_init (a number) or layer (λ_init = 0.8 − 0.6·e^(−0.3·layer), counted from 0)":
        "需要 lambda_init（一个数）或 layer（λ_init = 0.8 − 0.6·e^(−0.3·layer)，从 0 数起）",
    "gives both lambda_init and layer, which each set λ_init: give lambda_init or layer, not both":
        "同时给了 lambda_init 和 layer，二者都决定 λ_init：只给 lambda_init 或 layer 中的一个，不要同时给",
    "gives {} but not {}: all four λ vectors, or none (λ = λ_init)":
        "给了 {}，却没有给 {}：四个 λ 向量要么都给，要么都不给（λ = λ_init）",
    "is {}; expected d numbers shared by the head pairs, or {} × d (a row per pair of the {} heads)":
        "是 {}；应为各头对共用的 d 个数，或 {} × d（{} 个头的每一对一行）",
    "{} is not a whole number ≥ 0 (the layer, counted from 0)": "{} 不是 ≥ 0 的整数（层号，从 0 数起）",
    "is {} but lambda_q{} is {} (they are multiplied number by number)":
        "是 {}，但 lambda_q{} 是 {}（二者逐个数相乘）",
    "combines two softmaxes per head pair after the attention, with the values halved: {} is for one kernel call "
    "whose output is A·V":
        "在注意力之后按头对组合两个 softmax，且值被分成两半：{} 针对的是输出为 A·V 的一次内核调用",
}
