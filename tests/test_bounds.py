"""The streamed path's bounds on the scores (attncli.core.bounds), its cached tile masks, and
`attncli init -o doc.json`.

What attend computes, attend_streamed computes too (to 1e-12), and what attend refuses for overflow
attend_streamed refuses with the same message: also where a bound is computed from numbers near the ends
of float64 (a row norm's square underflowing to 0, a scale that overflows when folded into Q).
"""

from __future__ import annotations

import numpy as np
import pytest
from stream_helpers import assert_equal_traces, spec_of

from attncli.core import bounds, stream
from attncli.core.attention import projections
from attncli.core.errors import AttnError
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed


def _bounds_document(q_size: float, k_size: float, scale: float, **extra) -> dict:
    rng = np.random.default_rng(7)
    n, d = 12, 4
    data = {"inputs": np.eye(n, d).tolist(), "heads": 1, "scale": scale,
            "weights": {"query": (q_size * rng.normal(size=(d, d))).tolist(),
                        "key": (k_size * rng.normal(size=(d, d))).tolist(),
                        "value": rng.normal(size=(d, d)).tolist()}}
    data.update(extra)
    return data


def _same_as_attend(spec) -> None:
    """attend_streamed gives attend's numbers, or attend's overflow message, on one thread and two."""
    try:
        full = attend(spec)
    except AttnError as error:
        for threads in (1, 2):
            with pytest.raises(AttnError) as streamed:
                attend_streamed(spec, threads=threads)
            assert str(streamed.value) == str(error)
        return
    for threads in (1, 2):
        assert_equal_traces(full, attend_streamed(spec, threads=threads))


@pytest.mark.parametrize("q_size, k_size, scale", [
    (1e-163, 1e152, 1e14),  # every square of Q underflows to 0: its norm must not be taken as 0
    (1e152, 1e-163, 1e14),  # the same of K
    (1e-163, 1e152, -1e14),
    (1e-170, 1e150, 1e20),
    (1e-160, 1e150, 1e12),  # squares subnormal, not 0
])
def test_a_norm_whose_squares_underflow_still_bounds_the_scores(q_size, k_size, scale):
    """The scaled scores reach thousands, so exp needs the row maximum: a norm of 0 from underflowing squares
    made needs_shift say no, and exp overflowed into an `output overflow` error attend never gives."""
    spec = spec_of(_bounds_document(q_size, k_size, scale))
    q, k, v = projections(spec)
    if np.abs(attend(spec).scaled_scores).max() > bounds.EXP_LIMIT:  # a bound: it may ask for a shift not needed
        assert bounds.needs_shift(q, k, v, spec)[0]
    _same_as_attend(spec)
    _same_as_attend(spec_of(_bounds_document(q_size, k_size, scale, mask="causal")))


@pytest.mark.parametrize("q_size, k_size, scale, extra", [
    (1e150, 1e-150, 1e160, {}),  # the norms' bound is small, but scale·Q overflows
    (1e150, 1e-150, -1e160, {}),
    (1e200, 1e-200, 1e200, {}),  # a norm's square overflows: the entries' bound is small, scale·Q overflows
    (1e150, 1e-150, 1e160, {"softcap": 30.0}),
    (1e150, 1e-150, 1e160, {"mask": "causal"}),
    (1e150, 1e-150, 1e160, {"score_bias": {"alibi": True}, "mask": "causal"}),
    (1e-150, 1e150, 1e-160, {}),  # a tiny scale: nothing to overflow
    (1e155, 1e155, 1.0, {}),  # S overflows: attend's error
    (1e150, 1e150, 1e10, {}),  # scale·S overflows: attend's error
])
def test_a_scale_that_overflows_when_folded_into_q_is_applied_to_the_scores(q_size, k_size, scale, extra):
    """The unchecked tiles multiply Q by the scale before Q·Kᵀ; attend multiplies S.  |scale|·max|q| beyond
    float64 while every scaled score is finite gave an `output overflow` error attend never gives."""
    _same_as_attend(spec_of(_bounds_document(q_size, k_size, scale, **extra)))


def test_the_bounds_hold_for_the_norms_they_are_given():
    """largest_norms bounds every row norm from above, also where squares underflow; the scale folded into Q
    rules the unchecked path out."""
    spec = spec_of(_bounds_document(1e-163, 1e152, 1e14))
    q, k, v = projections(spec)
    q_norm, k_norm, _ = bounds.largest_norms(q, k, v, spec)
    assert q_norm[0] >= np.abs(q).max() > 0.0
    assert q_norm[0] * k_norm[0] >= np.abs(q @ k.transpose(0, 2, 1)).max()
    wide = spec_of(_bounds_document(1e150, 1e-150, 1e160))
    q, k, v = projections(wide)
    assert not bounds.norms_cannot_overflow(bounds.largest_norms(q, k, v, wide), wide)
    assert not bounds.cannot_overflow(q, k, wide)


def test_every_threads_count_and_tile_size_agree_near_the_ends_of_float64(monkeypatch):
    """Small tiles (the running maximum moves between tiles) change nothing above."""
    monkeypatch.setattr(stream, "BLOCK_CELLS", 24)
    for q_size, k_size, scale in ((1e-163, 1e152, 1e14), (1e150, 1e-150, 1e160)):
        _same_as_attend(spec_of(_bounds_document(q_size, k_size, scale, mask="causal", kv_heads=1, heads=1)))


@pytest.mark.parametrize("size, n, mask", [(1e306, 40, None), (1e307, 40, None), (1e307, 40, "causal"),
                                           (1.5e308, 3, None), (1e200, 40, None)])
def test_values_near_the_largest_float_are_summed_without_overflow(size, n, mask):
    """The tiles sum e·V (every e ≤ 1 once the row maximum is subtracted) and divide at the end; attend divides
    first, so its weighted mean of values near 1e307 is finite where the sum of 40 is not: the same numbers, not
    an `output overflow` error."""
    data = {"inputs": np.ones((n, 4)).tolist(), "heads": 1,
            "weights": {"query": np.eye(4).tolist(), "key": np.eye(4).tolist(),
                        "value": (size * np.diag([1.0, -1.0, 1e-300, 0.5])).tolist()}}
    if mask:
        data["mask"] = mask
    spec = spec_of(data)
    assert np.isfinite(attend(spec).output).all()
    _same_as_attend(spec)


@pytest.mark.parametrize("n, m, parts", [
    (23, 23, {"causal": True}),
    (17, 29, {"causal": "upper_left"}),
    (17, 29, {"causal": "lower_right"}),
    (29, 17, {"causal": "lower_right"}),
    (29, 17, {"causal": "upper_left", "window": 5}),
    (17, 29, {"causal": "lower_right", "window": 3}),
    (23, 31, {"window": 4}),
    (31, 23, {"window": 1}),
    (17, 29, {"causal": "lower_right", "window": 3, "keys": "padding"}),
    (17, 29, {"window": 4, "matrix": "per head"}),
    (17, 29, {"causal": "upper_left", "matrix": "shared"}),
])
def test_the_cached_band_masks_are_the_masks_of_every_tile(n, m, parts):
    """_Blocks.allowed keys causal and window alone by (r0 − s0, rows, keys): every rectangle, asked for in any
    order and twice, is the Mask's own block (with n ≠ m and both causal kinds); keys and matrix parts, which
    depend on where the tile is and on the head, are never cached."""
    from attncli.core.masks import Mask
    from attncli.core.tiles import _Blocks

    rng = np.random.default_rng(n * m)
    keys = rng.random(m) < 0.7 if parts.get("keys") else None
    matrix = {"per head": rng.random((2, n, m)) < 0.6, "shared": rng.random((n, m)) < 0.6}.get(parts.get("matrix"))
    mask = Mask(n, m, parts.get("causal") and ("upper_left" if parts["causal"] is True else parts["causal"]),
                parts.get("window"), keys, matrix)

    class _Spec:  # what _Blocks reads of a spec
        pass

    spec = _Spec()
    spec.mask, spec.heads, spec.kv_heads, spec.n, spec.m, spec.d_k, spec.d_v = mask, 2, 2, n, m, 4, 3
    spec.query_positions, spec.key_positions = np.arange(n), np.arange(m)
    spec.score_bias = spec.softcap = spec.sinks = None
    spec.scale = 1.0
    cells = [(r0, r1, s0, s1) for r0 in range(n) for r1 in range(r0 + 1, min(n, r0 + 7) + 1)
             for s0 in range(0, m, 3) for s1 in (s0 + 1, min(m, s0 + 5), min(m, s0 + 8))]
    order = [cells[i] for i in rng.permutation(len(cells))]
    found = _Blocks(None, None, None, spec, None, False, np.ones(2, bool), 8, 8, set())
    for r0, r1, s0, s1 in order + order:
        for h in (0, 1):
            allowed, blocked, some = found.allowed(r0, r1, s0, s1, h)
            truth = mask.block(r0, r1, s0, s1, head=h)
            if truth is None or truth.all():
                assert allowed is None or allowed.all()
                assert some
                continue
            assert allowed is not None and np.array_equal(allowed, truth), (r0, r1, s0, s1, h)
            assert np.array_equal(blocked, ~truth) and some == bool(truth.any())
    if keys is not None or matrix is not None:
        assert found.band == {}
    else:
        assert found.band


@pytest.mark.parametrize("tokens", ["a\x7fb c", "a\x9bb c", "a\x85b", "q\"u\\o \x01te 我想 🐕 null"])
def test_a_json_document_escapes_the_controls_the_yaml_one_escapes(runner, tmp_path, tokens):
    """DEL and the C1 controls (U+009B starts a terminal command) are written as \\u escapes in the JSON document,
    as in the YAML one: valid JSON either way, but raw they act on a terminal showing the file.  The tokens read
    back as given (split on whitespace, U+0085 included), and compute gives the YAML document's numbers."""
    import json

    from attncli.cli import app

    out = tmp_path / "doc.json"
    assert runner.invoke(app, ["init", "--tokens", tokens, "-o", str(out)]).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert not any(0x7F <= ord(c) <= 0x9F or ord(c) < 0x0A for c in text)
    assert json.loads(text)["tokens"] == tokens.split()
    from_json = runner.invoke(app, ["compute", str(out), "--format", "json"])
    yaml_text = runner.invoke(app, ["init", "--tokens", tokens]).stdout
    from_yaml = runner.invoke(app, ["compute", "-", "--format", "json"], input=yaml_text)
    assert from_json.exit_code == from_yaml.exit_code == 0 and from_json.stdout == from_yaml.stdout
