"""A layer of linear attention (docs/format.md Part 4): the delta rule (Gated DeltaNet, KDA) or lightning attention,
the checked problem and every intermediate.

:class:`LinearSpec` is what :mod:`attncli.inputs.linear` reads from a ``linear:`` document; :func:`run` computes
it once into a :class:`LinearTrace`, an ordered mapping of the JSON keys to their arrays, which every view reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attncli.core import delta, lightning
from attncli.core.errors import AttnError
from attncli.core.memory import ensure_fits
from attncli.core.threads import run_parallel

# The arrays of the result in the order of the computation (the JSON's order); ON_REQUEST only with --only.
KEYS = ("inputs", "projected_queries", "projected_keys", "projected_values", "queries", "keys", "values",
        "normalized_queries", "normalized_keys", "beta", "g", "slopes", "initial_state", "u", "intra", "inter", "state",
        "final_state", "head_outputs", "gate", "gated_head_outputs", "output", "grad_head_outputs", "grad_queries",
        "grad_keys", "grad_values", "grad_beta", "grad_g", "grad_slopes", "grad_initial_state", "chunk_states",
        "decayed_scores")
ON_REQUEST = ("chunk_states", "decayed_scores")
ACTIVATIONS = {"silu": delta.silu, "sigmoid": delta.sigmoid}
LIGHTNING_ACTIVATIONS = {**ACTIVATIONS, "none": lambda x: x}  # on q, k and v (MiniMax: config.hidden_act)


@dataclass
class LinearSpec:
    kind: str  # gated_delta | kda | lightning
    tokens: list[str]
    heads: int  # h_k, the query/key heads
    value_heads: int  # h_v, a multiple of h_k
    d_k: int
    d_v: int
    scale: float
    scale_name: str  # sqrt | none | number
    chunk: int = 64
    l2: bool = True
    inputs: np.ndarray | None = None  # X, n × d_model (None when q, k, v, β and g are given)
    weights: dict[str, np.ndarray] = field(default_factory=dict)  # query, key, value, beta, decay, gate, output
    conv: np.ndarray | None = None  # (2·h_k·d_k + h_v·d_v) × w
    a_log: np.ndarray | None = None  # h_v
    dt_bias: np.ndarray | None = None  # h_v, or h_v × d_k (kda)
    norm: tuple[np.ndarray, float, str] | None = None  # γ (d_v), ε, the gate's activation
    initial_state: np.ndarray | None = None  # h_v × d_k × d_v
    given: dict[str, np.ndarray] | None = None  # queries, keys, values, beta, g as the kernel receives them
    gradient: np.ndarray | None = None  # dL/d head_outputs, h_v × n × d_v (with them given directly)
    slopes: np.ndarray | None = None  # lightning: s_h, h (the state keeps e^{−s_h} of itself per token)
    activation: str = "silu"  # lightning: on q, k and v
    files: set[Path] = field(default_factory=set)

    @property
    def n(self) -> int:
        return len(self.tokens)

    def state_bytes(self) -> int:
        """What ``state``, the state after every token, takes: h_v × n × d_k × d_v float64."""
        return 8 * self.value_heads * self.n * self.d_k * self.d_v


class LinearTrace(dict):
    """JSON key -> array, in :data:`KEYS` order, with the spec it came from (``trace.spec``)."""

    def __init__(self, spec: LinearSpec, arrays: dict[str, np.ndarray]):
        super().__init__((key, arrays[key]) for key in KEYS if key in arrays)
        self.spec = spec


def _heads(x: np.ndarray, h: int) -> np.ndarray:
    """n × h·d -> h × n × d (consecutive column blocks, as Part 1's heads)."""
    return np.ascontiguousarray(x.reshape(x.shape[0], h, -1).transpose(1, 0, 2))


def _projections(spec: LinearSpec, arrays: dict) -> tuple[np.ndarray, ...]:
    """q, k (h_k × n × d_k), v (h_v × n × d_v), β (h_v × n) and g from X, through the conv and the decay."""
    x, w = spec.inputs, spec.weights
    arrays["inputs"] = x
    mixed = [x @ w["query"], x @ w["key"], x @ w["value"]]  # n × h_k·d_k, n × h_k·d_k, n × h_v·d_v
    counts = (spec.heads, spec.heads, spec.value_heads)
    if spec.conv is not None:
        for name, part, h in zip(("queries", "keys", "values"), mixed, counts):
            arrays["projected_" + name] = _heads(part, h)
        widths = np.cumsum([part.shape[1] for part in mixed])[:2]
        mixed = np.split(delta.silu(delta.causal_conv(np.concatenate(mixed, axis=1), spec.conv)), widths, axis=1)
    q, k, v = (_heads(part, h) for part, h in zip(mixed, counts))
    beta = delta.sigmoid(x @ w["beta"]).T  # h_v × n
    a = x @ w["decay"]  # n × h_v, or n × h_v·d_k (kda)
    a = a.T if spec.kind == "gated_delta" else _heads(a, spec.value_heads)
    g = delta.log_decay(a, spec.a_log, spec.dt_bias)
    return q, k, v, beta, g


def _backward(spec: LinearSpec, arrays: dict, q, k, v, beta, g) -> None:
    """The gradients of L = Σ gradient ⊙ head_outputs, through the recurrence, the scale, the l2 norm and the
    repeat of the query/key heads (a query/key head's gradient sums its value heads')."""
    dq, dk, dv, dbeta, dg, ds0 = delta.recurrent_backward(q, k, v, beta, g, spec.initial_state, arrays["state"],
                                                          spec.gradient)
    group = spec.value_heads // spec.heads
    dq = spec.scale * dq.reshape(spec.heads, group, *dq.shape[1:]).sum(axis=1)  # h_k × n × d_k
    dk = dk.reshape(spec.heads, group, *dk.shape[1:]).sum(axis=1)
    if spec.l2:
        dq, dk = delta.l2norm_backward(arrays["queries"], dq), delta.l2norm_backward(arrays["keys"], dk)
    arrays.update(grad_head_outputs=spec.gradient, grad_queries=dq, grad_keys=dk, grad_values=dv, grad_beta=dbeta,
                  grad_g=dg)
    if spec.initial_state is not None:
        arrays["grad_initial_state"] = ds0


def _chunked_by_heads(q, k, v, beta, g, s0, chunk: int, keep_chunks: bool):
    """:func:`attncli.core.delta.chunked`, the heads (independent) shared among our threads, one BLAS thread each:
    OpenBLAS's own threads on products of 64 rows wait for each other (17 times slower on a busy machine)."""
    h, n, d_v = v.shape
    count = -(-n // chunk)
    o, u, final = np.zeros((h, n, d_v)), np.zeros((h, n, d_v)), np.zeros((h, k.shape[2], d_v))
    chunks = np.zeros((h, count, k.shape[2], d_v)) if keep_chunks else None

    def part(heads: slice) -> None:
        start = None if s0 is None else s0[heads]
        o[heads], u[heads], states, final[heads] = delta.chunked(q[heads], k[heads], v[heads], beta[heads], g[heads],
                                                                 start, chunk, keep_chunks)
        if chunks is not None:
            chunks[heads] = states

    run_parallel(part, [slice(j, j + 1) for j in range(h)], None, None)
    return o, u, chunks, final


def run(spec: LinearSpec, keep_state: bool = True, keep_chunks: bool = False,
        keep_scores: bool = False) -> LinearTrace:
    """Every intermediate of the layer; ``keep_state``: the state after every token too (the recurrence);
    ``keep_chunks``: the state after each chunk; ``keep_scores`` (lightning): the direct sum's n × n matrices."""
    keep_state = keep_state or spec.gradient is not None  # (the backward pass reads the state after every token)
    if keep_state:
        hint = ("; the backward pass reads it: fewer tokens or heads" if spec.gradient is not None
                else "; --only without state (e.g. --only output) keeps none")
        ensure_fits(spec.state_bytes(), f"the state after every token (state, {spec.value_heads} × {spec.n} × "
                    f"{spec.d_k} × {spec.d_v})", hint=hint)
    if keep_scores and spec.kind == "lightning":
        ensure_fits(8 * spec.heads * spec.n * spec.n, f"the decayed scores (decayed_scores, {spec.heads} × {spec.n} × "
                    f"{spec.n})", hint="; fewer tokens")
    with np.errstate(over="ignore", invalid="ignore"):
        if spec.kind == "lightning":
            arrays = _lightning_arrays(spec, keep_state, keep_chunks, keep_scores)
        else:
            arrays = _arrays(spec, keep_state, keep_chunks)
    for key in ("u", "final_state", "head_outputs", "output", "grad_queries", "grad_keys", "grad_g", "grad_slopes"):
        if key not in arrays:
            continue
        if not np.isfinite(arrays[key]).all():
            raise AttnError("linear.overflows_float64_decay_g_makes",
                            "linear", key=key)
    return LinearTrace(spec, arrays)


def _arrays(spec: LinearSpec, keep_state: bool, keep_chunks: bool) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    if spec.given is None:
        q, k, v, beta, g = _projections(spec, arrays)
    else:
        q, k, v, beta, g = (spec.given[key] for key in ("queries", "keys", "values", "beta", "g"))
    arrays.update(queries=q, keys=k, values=v)
    if spec.l2:
        q, k = delta.l2norm(q), delta.l2norm(k)
        arrays.update(normalized_queries=q, normalized_keys=k)
    group = spec.value_heads // spec.heads  # value head j reads query/key head j // group
    q = spec.scale * q
    if group > 1:  # (np.repeat copies: with one value head per query/key head, q and k are used as they are)
        q, k = np.repeat(q, group, axis=0), np.repeat(k, group, axis=0)
    arrays.update(beta=beta, g=g)
    if spec.initial_state is not None:
        arrays["initial_state"] = spec.initial_state
    o, u, chunks, final = _chunked_by_heads(q, k, v, beta, g, spec.initial_state, spec.chunk, keep_chunks)
    arrays.update(u=u, final_state=final, head_outputs=o)
    if keep_chunks:
        arrays["chunk_states"] = chunks
    if keep_state:
        arrays["state"] = delta.recurrent(q, k, v, beta, g, spec.initial_state)[2]
    if spec.gradient is not None:
        _backward(spec, arrays, q, k, v, beta, g)
    return finished(spec, arrays, o)


def recurrence_inputs(spec: LinearSpec, arrays: dict) -> tuple[np.ndarray, ...]:
    """q (scaled), k, v, β, g of a delta-rule layer as its recurrence takes them (h_v heads), from its arrays."""
    q = arrays.get("normalized_queries", arrays["queries"])
    k = arrays.get("normalized_keys", arrays["keys"])
    q, group = spec.scale * q, spec.value_heads // spec.heads
    if group > 1:
        q, k = np.repeat(q, group, axis=0), np.repeat(k, group, axis=0)
    return q, k, arrays["values"], arrays["beta"], arrays["g"]


def finished(spec: LinearSpec, arrays: dict, o: np.ndarray) -> dict[str, np.ndarray]:
    """``arrays`` with what follows the heads' outputs o (h × n × d_v): the gate, the norm, the output projection
    (a delta rule: the gated RMSNorm per head; lightning: the RMSNorm over every head, then the sigmoid gate)."""
    y = o
    if spec.kind == "lightning":
        if spec.norm is not None:  # the RMSNorm over all h·d_v outputs of a token
            side = o.transpose(1, 0, 2).reshape(spec.n, -1)
            y = _heads(delta.gated_rms_norm(side, None, spec.norm[0], spec.norm[1]), spec.heads)
        if "gate" in spec.weights:
            arrays["gate"] = delta.sigmoid(_heads(spec.inputs @ spec.weights["gate"], spec.heads))
            y = arrays["gate"] * y
        if y is not o:
            arrays["gated_head_outputs"] = y
    else:
        gate = None
        if "gate" in spec.weights:
            gate = ACTIVATIONS[spec.norm[2]](_heads(spec.inputs @ spec.weights["gate"], spec.value_heads))
            arrays["gate"] = gate
        if spec.norm is not None:
            y = delta.gated_rms_norm(o, gate, spec.norm[0], spec.norm[1])
            arrays["gated_head_outputs"] = y
    out = y.transpose(1, 0, 2).reshape(spec.n, -1)  # the heads side by side
    arrays["output"] = out @ spec.weights["output"] if "output" in spec.weights else out
    return arrays


def _blocked_by_heads(q, k, v, s, s0, block: int, keep_blocks: bool):
    """:func:`attncli.core.lightning.blocked`, the heads shared among our threads (as :func:`_chunked_by_heads`)."""
    h, n, d_v = v.shape
    intra, inter, final = np.zeros((h, n, d_v)), np.zeros((h, n, d_v)), np.zeros((h, k.shape[2], d_v))
    blocks = np.zeros((h, -(-n // block), k.shape[2], d_v)) if keep_blocks else None

    def part(heads: slice) -> None:
        start = None if s0 is None else s0[heads]
        intra[heads], inter[heads], states, final[heads] = lightning.blocked(q[heads], k[heads], v[heads], s[heads],
                                                                             start, block, keep_blocks)
        if blocks is not None:
            blocks[heads] = states

    run_parallel(part, [slice(j, j + 1) for j in range(h)], None, None)
    return intra, inter, blocks, final


def _lightning_arrays(spec: LinearSpec, keep_state: bool, keep_chunks: bool,
                      keep_scores: bool) -> dict[str, np.ndarray]:
    """Every intermediate of a lightning layer (docs/format.md Part 4, ``kind: lightning``)."""
    arrays: dict[str, np.ndarray] = {}
    if spec.given is None:
        x, w = spec.inputs, spec.weights
        arrays["inputs"] = x
        act = LIGHTNING_ACTIVATIONS[spec.activation]
        for name, key in (("queries", "query"), ("keys", "key"), ("values", "value")):
            arrays["projected_" + name] = _heads(x @ w[key], spec.heads)  # h × n × d, before the activation
            arrays[name] = act(arrays["projected_" + name])
        q, k, v = arrays["queries"], arrays["keys"], arrays["values"]
    else:
        q, k, v = (spec.given[key] for key in ("queries", "keys", "values"))
        arrays.update(queries=q, keys=k, values=v)
    q, s, s0 = spec.scale * q, spec.slopes, spec.initial_state
    arrays["slopes"] = s
    if s0 is not None:
        arrays["initial_state"] = s0
    intra, inter, blocks, final = _blocked_by_heads(q, k, v, s, s0, spec.chunk, keep_chunks)
    o = intra + inter
    arrays.update(intra=intra, inter=inter)
    if keep_state:
        arrays["state"] = lightning.recurrent(q, k, v, s, s0)[1]
    arrays.update(final_state=final, head_outputs=o)
    if spec.gradient is not None:
        dq, dk, dv, ds, ds0 = lightning.recurrent_backward(q, k, v, s, s0, arrays["state"], spec.gradient)
        arrays.update(grad_head_outputs=spec.gradient, grad_queries=spec.scale * dq, grad_keys=dk, grad_values=dv,
                      grad_slopes=ds)
        if s0 is not None:
            arrays["grad_initial_state"] = ds0
    finished(spec, arrays, o)
    if keep_chunks:
        arrays["chunk_states"] = blocks
    if keep_scores:
        arrays["decayed_scores"] = lightning.decayed_scores(q, k, s)
    return arrays
