"""Option checks that need the document, made before any matrix is read or attention computed.

Each check runs twice where it can: on the document's outline (:mod:`attncli.inputs.outline`: its keys, and
its heads and tokens when it states them), right after the document is parsed; and on the built Spec, before
the attention, for what only the matrices' shapes tell. Checks of an option alone (``--head 0``, ``--step 9``)
take None for what the document would tell, and run before the document is read.
"""

from __future__ import annotations

from typing import Optional

from attncli.cli.options import whole_number
from attncli.core.errors import AttnError, quoted, shorten

# --only KEY -> the parts of the document (attncli.inputs.outline) any one of which makes it (docs/format.md)
MADE_BY = {
    "bias_query": ("bias.query",), "bias_key": ("bias.key",), "bias_value": ("bias.value",),
    "weight_output": ("weights.output",), "bias_output": ("bias.output",), "context": ("context",),
    "positional": ("positional",), "normalized_inputs": ("pre_norm",), "queries_rotated": ("rope",),
    "keys_rotated": ("rope",), "normalized_queries": ("qk_norm",), "normalized_keys": ("qk_norm",),
    "score_bias": ("score_bias",), "normalized_output": ("post_norm",),
    "residual": ("add_norm", "residual"), "normalized": ("add_norm",),
    "query_temperature": ("query_temperature",), "weight_gate": ("weights.gate",), "bias_gate": ("bias.gate",),
    "gate": ("weights.gate",), "gated_head_outputs": ("weights.gate",),
}
MADE_BY.update({key: ("indexer",) for key in ("index_queries", "index_keys", "index_head_weights", "index_scores",
                                             "index_selected", "index_mask", "index_ties", "index_dropped_weight")})


def head_index(head: Optional[int], heads: Optional[int]) -> Optional[int]:
    """``--head`` (counting from 1; None: all) -> 0-based; ``heads`` None: not known yet,
    only ``--head 0`` is refused."""
    if head is None:
        return None
    if heads is None:
        if head < 1:
            raise AttnError("checks.head_out_range_heads_count", head=shorten(head))
        return head - 1
    if not 1 <= head <= heads:  # (a range of two is "1 and 2", of one "head 1")
        if heads == 1:
            raise AttnError("checks.head_out_range_this_document_2", head=shorten(head))
        if heads == 2:
            raise AttnError("checks.head_out_range_this_document_3", head=shorten(head))
        raise AttnError("checks.head_out_range_this_document", head=shorten(head), heads=heads)
    return head - 1


def only_present(keys: Optional[list[str]], parts: frozenset[str]) -> None:
    """Every optional array ``--only`` names is made by a part the document has (``queries_rotated``: ``rope``)."""
    from attncli.outputs.serialize import NEEDS

    for key in keys or []:
        if key in MADE_BY and not parts & set(MADE_BY[key]):
            raise AttnError("checks.needs_document", "--only", key=key, needs=NEEDS[key])


def extra_steps(parts: frozenset[str]) -> list[str]:
    """The extra steps explain shows for a document with these parts (add_norm includes the residual)."""
    from attncli.core.stages import EXTRA_STEPS  # (numpy: imported once the command runs)

    extras = [name for name in EXTRA_STEPS if name in parts and name not in ("add_norm", "residual")]
    extras += ["add_norm"] if "add_norm" in parts else ["residual"] if "residual" in parts else []
    return extras + (["backward"] if "gradient" in parts else [])  # the backward pass, with gradient:


def step_choice(step: str, extras: Optional[list[str]]) -> None:
    """``--step``: all, 1 … 8, or an extra step of this document (``extras``; None: not known yet)."""
    if step == "all":
        return
    from attncli.core.stages import EXTRA_STEPS

    known = extras if extras is not None else [*EXTRA_STEPS, "backward"]
    valid = "1 to 8" + "".join(f", {name}" for name in known) + " or all"
    if extras is None:
        valid = f"1 to 8 or all, and {', '.join(EXTRA_STEPS[:-1])} or {EXTRA_STEPS[-1]} when the document has them"
    number = whole_number(step)
    if number is not None:
        if not 1 <= number <= 8:
            raise AttnError("checks.out_range_steps", "--step", strip=shorten(step.strip()), valid=valid)
        return
    if step in known:
        return
    from attncli.teach.explain.walkthrough import NEEDS

    if step == "residual" and "add_norm" in known:
        raise AttnError("checks.residual_part_step_add_norm_here",
                        "--step", valid=valid)
    if step in NEEDS:
        raise AttnError("checks.needs_document_steps_here", "--step", step=step, needs=NEEDS[step], valid=valid)
    raise AttnError("checks.unknown_step_steps", "--step", step=quoted(step), valid=valid)


def query_index(query: Optional[str], tokens: Optional[list[str]]) -> int:
    """``--query``: a number from 1 to n, or one of the token labels; 0-based. ``tokens`` None: not known yet, only
    a number below 1 is refused."""
    if query is None:
        return 0
    i = whole_number(query)
    if tokens is None:
        if i is not None and i < 1:
            raise AttnError("checks.out_range_queries_count_from", "--query", strip=shorten(query.strip()))
        return 0
    if i is not None:
        if not 1 <= i <= len(tokens):
            if len(tokens) == 1:
                raise AttnError("checks.out_range_this_document_has_2",
                                "--query", strip=shorten(query.strip()))
            if len(tokens) == 2:
                raise AttnError("checks.out_range_this_document_has_3",
                                "--query", strip=shorten(query.strip()))
            raise AttnError("checks.out_range_this_document_has",
                            "--query", strip=shorten(query.strip()), count=len(tokens))
        return i - 1
    if query in tokens:
        return tokens.index(query)
    shown = ", ".join(shorten(t, 20) for t in tokens[:12]) + (", …" if len(tokens) > 12 else "")
    raise AttnError("checks.neither_query_number_nor_token", "--query", query=quoted(query), count=len(tokens),
                    shown=shown)


def verdict(trace, results: dict, dtype: str, file: str) -> list:
    """The low-precision verdict on one sequence's ``results`` (attncli's keys and shapes) against ``trace``."""
    from attncli.core.emulate import eager
    from attncli.core.errors import AttnError
    from attncli.core.verdict import judge

    gradients = [key for key in results if key.startswith("grad_")]
    if gradients and trace.spec.gradient is None:
        raise AttnError("checks.needs_gradient_document_do_kernel", file, gradients=gradients[0])
    truths = {key: trace.gradients[key] if key.startswith("grad_") else getattr(trace, key) for key in results}
    d_o = trace.grad_head_outputs if gradients else None
    emulated = eager(trace.spec, trace.kernel_queries, trace.kernel_keys, trace.mixed_values, d_o, dtype,
                     option="--dtype")
    return judge(truths, results, emulated, dtype)
