"""How much memory a computation takes, with its result written or shown, roughly (bytes).

The full computation (:func:`attncli.core.pipeline.attend`) keeps h × n × m matrices; the streamed one
(:func:`attncli.core.stream.attend_streamed`) a block of them per thread; the stages before the scores
(:func:`attncli.core.pipeline.attend_until`) none. Each kind of result adds its own text or file.
"""

from __future__ import annotations

from attncli.core.gradient_keys import GRADIENT_KEYS
from attncli.core.pipeline import needed
from attncli.core.spec import Spec
from attncli.core.stages import MATRIX_KEYS, QUANTITIES, STAGES
from attncli.core.threads import cores

BASE = 64 << 20  # the interpreter and its modules; a small result's text fits in this allowance too
# Bytes per number written, for every number of the result, as each kind builds it before writing (measured:
# JSON text is about 20 bytes a number, orjson's buffer up to twice that, plus a C-ordered copy of each array).
WRITTEN = {"json": 64, ".npz": 16, ".npy": 16, "csv": 56, "markdown --full": 128, "latex --full": 128,
           "table --full": 1000, "heatmap --full": 128}
# Bytes per cell of one head's n × m matrix (or of the largest other array) that a view reads, one matrix at a time
# (whole-number tests, copies, np.allclose; explain's and --why's JSON write some n × m tables with Python's json).
READ = {"table": 16, "table --full": 16, "markdown": 24, "markdown --full": 24, "latex": 24, "latex --full": 24,
        "heatmap": 8, "heatmap --full": 24, "explain": 20, "explain json": 200, "why": 64, "why json": 900, "check": 16}
FLOPS = 50e9  # about what one process computes the scores at, for how long a computation takes


def full_bytes(spec: Spec, keys: list[str] | None, kind: str) -> int:
    """Peak memory of :func:`attncli.core.pipeline.attend` plus writing ``keys`` as ``kind``, roughly (bytes)."""
    cells = spec.heads * spec.n * spec.m
    width = 3 + (2 * spec.w_1.shape[2] if spec.score == "additive" else 0)  # S, scale·S, A (+ tanh's h·n·m·d_a)
    width += 2 if spec.score_bias is not None else 0  # B, and its finite part
    width += 5 if spec.gradient is not None else 0  # the backward's dA, dZ, dS and their temporaries
    present = [key for key in MATRIX_KEYS if spec.gradient is not None or key not in GRADIENT_KEYS]
    kept = len([key for key in (keys or present) if key in present])
    per_cell = WRITTEN.get(kind, 0)  # Python floats and text; or the file's bytes
    read = READ.get(kind, 0) * spec.n * spec.m  # one head's matrix at a time
    absorbed = 8 * spec.heads * spec.n * (spec.latent.r_kv + spec.latent.d_rope) if spec.latent is not None else 0
    return (resident_bytes(spec) + 8 * width * cells + per_cell * kept * cells + read + absorbed
            + beyond_base(written_bytes(spec, keys, kind)))


def written_bytes(spec: Spec, keys: list[str] | None, kind: str) -> int:
    """Memory for showing or writing the arrays other than the n × m matrices as ``kind`` (bytes)."""
    n, m = spec.n, spec.m
    sizes = {key: numbers(q.shape, spec) if present(key, spec) else 0 for key, q in QUANTITIES.items()
             if not q.parameter and not q.matrix and key not in GRADIENT_KEYS}  # each stage's arrays, by its shape
    asked = {key: numbers(q.shape, spec) for key, q in QUANTITIES.items()  # the kernel's view: only when named
             if q.parameter and not q.source and key not in GRADIENT_KEYS and present(key, spec)}
    numbers_written = sum(size for key, size in sizes.items() if keys is None or key in keys)
    numbers_written += sum(size for key, size in asked.items() if keys is not None and key in keys)
    labels = 0
    if kind in ("json", "csv"):  # every label, written out (a control character in 6 bytes), in a buffer of twice that
        labels = 12 * (sum(map(len, spec.tokens)) + sum(map(len, spec.context_tokens)) + 4 * (n + m))
    return WRITTEN.get(kind, 0) * numbers_written + READ.get(kind, 0) * max(sizes.values()) + labels


def present(key: str, spec: Spec) -> bool:
    """Whether this document has the array ``key``: its stage runs (the document's own array: the Spec has it)."""
    source = QUANTITIES[key].source
    if source:
        return spec.given(source) is not None
    return any(stage.present(spec) for stage in STAGES if key in (q.key for q in stage.writes))


def numbers(shape: str, spec: Spec) -> int:
    """How many numbers an array of ``shape`` (a Quantity's: ``h n d_k``, ``r_kv+d_r`` …) holds for this document."""
    dims = _dims(spec)
    total = 1
    for dim in shape.split():
        total *= sum(_product(term, dims) for term in dim.strip("()").split("+"))
    return total


def _product(term: str, dims: dict[str, int]) -> int:
    out = 1
    for name in term.replace("(", "").replace(")", "").split("·"):
        out *= int(name) if name.isdigit() else dims[name]
    return out


def _dims(spec: Spec) -> dict[str, int]:
    """The letters of a Quantity's shape, for this document."""
    d_model = spec.inputs.shape[1]
    lat, rope = spec.latent, spec.rope
    return {"h": spec.heads, "g": spec.kv_heads, "n": spec.n, "m": spec.m, "d_k": spec.d_k, "d_v": spec.d_v,
            "d_model": d_model, "d_ctx": d_model if spec.context is None else spec.context.shape[1],
            "d_out": spec.heads * spec.d_v if spec.w_o is None else spec.w_o.shape[1],
            "dims/2": 0 if rope is None else rope.frequencies.shape[0],
            "r_q": 0 if lat is None else lat.r_q or 0, "r_kv": 0 if lat is None else lat.r_kv,
            "d_r": 0 if lat is None else lat.d_rope,
            "p": spec.heads // 2, "d_λ": 0 if spec.differential is None or spec.differential.lambda_q1 is None else
            spec.differential.lambda_q1.size,
            **_indexer_dims(spec)}


def _indexer_dims(spec: Spec) -> dict[str, int]:
    """The indexer's letters: H heads of d_I numbers, k kept keys per query (0 without ``indexer``)."""
    ix = spec.indexer
    return {"H": 0 if ix is None else ix.heads, "d_I": 0 if ix is None else ix.d,
            "k": 0 if ix is None else min(ix.top_k, spec.m)}


def _latent_sizes(spec: Spec) -> dict[str, int]:
    """The numbers of latent_queries, latent_kv and absorbed_queries (none without ``latent``)."""
    if spec.latent is None:
        return {}
    return {key: numbers(QUANTITIES[key].shape, spec) for key in ("latent_queries", "latent_kv", "absorbed_queries")}


def beyond_base(written: int) -> int:
    """What a result's text takes beyond :data:`BASE`, the allowance it shares with the interpreter."""
    return max(written - BASE, 0)


def streamed_bytes(spec: Spec) -> int:
    """Peak memory of :func:`attncli.core.stream.attend_streamed`, roughly (bytes): the n × d arrays and the blocks."""
    from attncli.core import stream  # (with its tiles: imported when a document is too large for the full path)
    from attncli.core.tiles import tile_keys

    if stream.fast(spec):
        rows = stream.fast_rows(spec)
        keys = tile_keys(spec, rows, stream.cells())
        block = rows * keys * (26 if spec.score_bias is not None else 10)  # scores, mask (, bias and its parts)
    else:
        block = stream.generic_rows(spec) * stream.generic_row_bytes(spec)
    return resident_bytes(spec) + cores() * block + backward_bytes(spec)


def backward_bytes(spec: Spec) -> int:
    """What the streamed backward pass adds (bytes): the gradients of the per-row arrays (each stage's, a few at a
    time) and a few tiles per thread, with its key/value head's [K, 1] and [V, 1]
    (:mod:`attncli.core.stream_backward`)."""
    if spec.gradient is None:
        return 0
    from attncli.core.stream_backward import KEYS, ROWS

    h, g, n, m = spec.heads, spec.kv_heads, spec.n, spec.m
    rows = 4 * (h * n * (spec.d_k + spec.d_v) + g * m * (spec.d_k + spec.d_v) + n * spec.inputs.shape[1])
    lat = spec.latent
    if lat is not None:  # the latent's step: [c_raw | k_r], its gradient and dc_KV (c_Q's), and dW_UKV … (core.latent)
        rows += 3 * (m * (lat.r_kv + lat.d_rope) + n * (lat.r_q or 0)) + lat.kv_down.size + lat.kv_up.size
        rows += 0 if lat.query_down is None else lat.query_down.size + lat.query_up.size
    return 8 * rows + cores() * 8 * (8 * ROWS * KEYS + m * (spec.d_k + spec.d_v + 2))  # tiles, [K, 1] and [V, 1]


def resident_bytes(spec: Spec) -> int:
    """What either computation keeps (bytes): the n × d arrays, the mask, the interpreter (:data:`BASE`)."""
    n, m, h = spec.n, spec.m, spec.heads
    d_model = spec.inputs.shape[1]
    d_ctx = d_model if spec.context is None else spec.context.shape[1]
    arrays = n * d_model * 3 + m * d_ctx + h * (n + m) * spec.d_k + h * (m + 2 * n) * spec.d_v
    if spec.rope is not None:  # Q′ and K′ beside Q and K
        arrays += h * n * spec.d_k + spec.kv_heads * m * spec.d_k
    if spec.pre_norm is not None:  # X̂
        arrays += n * d_model
    if spec.query_temperature is not None:  # τ ⊙ Q′
        arrays += h * n * spec.d_k
    if spec.w_g is not None:  # G and H ⊙ G
        arrays += 2 * h * n * spec.d_v
    arrays += h * n * (1 if spec.sinks is None else 2)  # lse (h, n), and the sink's share with sinks
    if spec.qk_norm is not None:  # Q̂ and K̂ beside Q and K (and Q′, K′)
        arrays += h * n * spec.d_k + spec.kv_heads * m * spec.d_k
    if spec.latent is not None:  # c_KV (and c_Q): the absorbed queries are counted where they are made
        arrays += m * spec.latent.r_kv + n * (spec.latent.r_q or 0)
    given = 0  # the mask and score bias matrices the document gave (causal, window and ALiBi take no memory)
    if spec.mask is not None and spec.mask.matrix is not None:
        given += spec.mask.matrix.size
    if spec.score_bias is not None and spec.score_bias.matrix is not None:
        given += 8 * spec.score_bias.matrix.size
    if spec.indexer is not None:  # the indexer's table I (n × m), its sort's indices and the kept cells, made whole
        given += 17 * n * m
    return 8 * arrays + given + BASE


def partial_bytes(spec: Spec, keys: list[str]) -> int:
    """Memory the arrays :func:`attncli.core.pipeline.attend_until` makes for ``keys`` take, with their temporaries
    (bytes)."""
    n, m, h, g = spec.n, spec.m, spec.heads, spec.kv_heads
    numbers = 0
    for stage in needed(keys):
        if stage.name == "pre_norm" and stage.present(spec):
            numbers += 2 * n * spec.inputs.shape[1]  # X̂ and a row's worth of temporaries per row
        elif stage.name == "projections" or stage.name == "latent" and stage.present(spec):
            numbers += 2 * (h * n * spec.d_k + g * m * (spec.d_k + spec.d_v))  # Q, K, V and each product's copy
            numbers += sum(_latent_sizes(spec).values()) if stage.name == "latent" else 0  # c_Q, c_KV (, Q_abs)
        elif stage.name == "rope" and stage.present(spec):
            numbers += 2 * (h * n + g * m) * spec.d_k  # Q′, K′ and the cos/sin they are turned with
        elif stage.name == "gate" and stage.present(spec):
            numbers += 2 * h * n * spec.d_v  # G and the logits it is made from
        elif stage.name.startswith("qk_norm") and stage.present(spec):
            numbers += 2 * (h * n + g * m) * spec.d_k  # Q̂, K̂ and a temporary (LayerNorm's centred numbers)
    return 8 * numbers


def seconds(spec: Spec) -> float:
    """About how long the scores and the weighted values take (4·h·n·m·d_k operations at :data:`FLOPS`)."""
    return 4 * spec.heads * spec.n * spec.m * spec.d_k / FLOPS
