"""``attncli init --rope-scaling TYPE``: the ``rope.scaling`` lines of a starter document, commented."""

from __future__ import annotations

SCALINGS = {  # init --rope-scaling: Hugging Face's rope_parameters of a typical checkpoint of each kind
    "linear": ("Linear (position interpolation): every frequency divided by factor.", ["factor: 4"]),
    "dynamic": ("Dynamic NTK: a larger base once the positions pass L (here never: n < L).",
                ["factor: 4", "original_max_position_embeddings: 4096   # L: the model's max_position_embeddings"]),
    "llama3": ("Llama 3.1: slow waves divided by factor, fast ones kept, a blend between.",
               ["factor: 8", "low_freq_factor: 1", "high_freq_factor: 4", "original_max_position_embeddings: 8192"]),
    "yarn": ("YaRN: the slow pairs stretched by factor, and cos and sin times a = 0.1·ln(factor) + 1.",
             ["factor: 4", "original_max_position_embeddings: 4096", "# beta_fast: 32, beta_slow: 1, mscale,",
              "# mscale_all_dim, truncate: true"]),
    "longrope": ("LongRoPE (Phi-3): each frequency divided by its own factor, short_factor while the positions stay "
                 "below L,\n# long_factor past it; cos and sin times a = √(1 + ln factor / ln L).",
                 ["factor: 32   # max_position_embeddings / original_max_position_embeddings when a config has none",
                  "original_max_position_embeddings: 4096   # Phi-3: the config's top-level one"]),
}


def rope_scaling_lines(kind: str, half: int) -> list[str]:
    comment, fields = SCALINGS[kind]
    lines = ["  # " + line for line in comment.split("\n# ")] + ["  scaling:", f"    type: {kind}"]
    lines += [f"    {field}" for field in fields]
    if kind == "longrope":
        lines += [f"    short_factor: {[1.0] * half}   # dims/2 numbers", f"    long_factor: {[4.0] * half}"]
    return lines
