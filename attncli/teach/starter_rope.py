"""``attncli init --rope-scaling TYPE``: the ``rope.scaling`` lines of a starter document, commented (the comments'
texts: ``starter.scaling`` in the texts' files)."""

from __future__ import annotations

from attncli.teach.starter_words import comment

SCALINGS = {  # init --rope-scaling: Hugging Face's rope_parameters of a typical checkpoint of each kind, and the id
    # of each field's comment in starter.scaling (None: no comment)
    "linear": [("factor: 4", None)],
    "dynamic": [("factor: 4", None), ("original_max_position_embeddings: 4096", "original")],
    "llama3": [("factor: 8", None), ("low_freq_factor: 1", None), ("high_freq_factor: 4", None),
               ("original_max_position_embeddings: 8192", None)],
    "yarn": [("factor: 4", None), ("original_max_position_embeddings: 4096", None),
             ("# beta_fast: 32, beta_slow: 1, mscale,", None), ("# mscale_all_dim, truncate: true", None)],
    "longrope": [("factor: 32", "factor"), ("original_max_position_embeddings: 4096", "phi3")],
}


def rope_scaling_lines(kind: str, half: int, t: dict) -> list[str]:
    """The lines of ``rope.scaling`` of type ``kind`` (``half``: d_k/2, the numbers of each factor list), commented
    with the starter's texts ``t``."""
    notes = t["scaling"]
    lines = comment(notes[kind], "  ") + ["  scaling:", f"    type: {kind}"]
    lines += [f"    {field}" + (f"   # {notes[note]}" if note else "") for field, note in SCALINGS[kind]]
    if kind == "longrope":
        lines += [f"    short_factor: {[1.0] * half}   # {notes['half']}", f"    long_factor: {[4.0] * half}"]
    return lines
