"""The stages' variants are named lazily (issue 39, start-up): ``compute`` imports no module of core/variants/, and
check reads the same variants, in the same order and as the same objects, as when each stage held its tuple.

The expected tuples are written out here as the stage list declared them before (``SCALE_VARIANTS +
(SOFTCAP_LEFT_OUT,) + …``), from the variant modules themselves, not from the stages.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attncli.core.stage import Lazy, resolved
from attncli.core.variants import Variant

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def declared_before() -> dict[str, tuple[Variant, ...]]:
    """Each stage's variants as core/stages.py and the stages' own modules wrote them before they were lazy."""
    from attncli.core.variants import backward as wrong_back
    from attncli.core.variants import left_out
    from attncli.core.variants.differential import DIFFERENTIAL_VARIANTS
    from attncli.core.variants.heads import HEAD_VARIANTS
    from attncli.core.variants.indexer import INDEXER_VARIANTS
    from attncli.core.variants.latent import LATENT_VARIANTS, ROPE_LATENT_VARIANTS, SCALE_LATENT_VARIANTS
    from attncli.core.variants.masks import MASK_VARIANTS
    from attncli.core.variants.max_logits import MAX_LOGIT_VARIANTS
    from attncli.core.variants.norms import POST_NORM_VARIANTS, PRE_NORM_VARIANTS, RESIDUAL_VARIANTS
    from attncli.core.variants.products import MIX_VARIANTS, OUTPUT_VARIANTS, SCORE_VARIANTS
    from attncli.core.variants.qknorm import QK_NORM_AFTER_ROPE_VARIANTS, QK_NORM_VARIANTS, ROPE_QK_NORM_VARIANTS
    from attncli.core.variants.rope import ROPE_VARIANTS
    from attncli.core.variants.scale import BIAS_VARIANTS, SCALE_VARIANTS
    from attncli.core.variants.softmax import SOFTMAX_VARIANTS

    return {
        "pre_norm": PRE_NORM_VARIANTS, "latent": LATENT_VARIANTS, "projections": HEAD_VARIANTS,
        "clip_qkv": (left_out.CLIP_LEFT_OUT,), "qk_norm": QK_NORM_VARIANTS, "v_norm": (left_out.V_NORM_LEFT_OUT,),
        "rope": ROPE_VARIANTS + ROPE_LATENT_VARIANTS + ROPE_QK_NORM_VARIANTS,
        "qk_norm_after_rope": QK_NORM_AFTER_ROPE_VARIANTS, "indexer": INDEXER_VARIANTS,
        "scores": SCORE_VARIANTS + wrong_back.SCORES_BACKWARD, "score_bias": BIAS_VARIANTS,
        "scale": SCALE_VARIANTS + (left_out.SOFTCAP_LEFT_OUT,) + SCALE_LATENT_VARIANTS + wrong_back.SCALE_BACKWARD,
        "weights": SOFTMAX_VARIANTS + MASK_VARIANTS + (left_out.SINK_LEFT_OUT,) + wrong_back.WEIGHTS_BACKWARD,
        "max_logits": MAX_LOGIT_VARIANTS, "mix": MIX_VARIANTS + wrong_back.MIX_BACKWARD,
        "differential": DIFFERENTIAL_VARIANTS, "gating": (left_out.GATE_LEFT_OUT,),
        "output": OUTPUT_VARIANTS + (left_out.GATE_AFTER_OUTPUT,), "post_norm": POST_NORM_VARIANTS,
        "residual": RESIDUAL_VARIANTS,
    }


def test_each_stage_reads_the_variants_it_declared_before_as_the_same_objects():
    from attncli.core.stages import STAGES

    before = declared_before()
    lazy = {stage.name for stage in STAGES if isinstance(stage.variants, Lazy)}
    assert lazy == set(before) | {"query_temperature"}  # every stage with variants names them lazily
    for stage in STAGES:
        got = tuple(stage.variants)
        if stage.name == "query_temperature":  # made from the stage's own query reader: one variant
            assert [v.name for v in got] == ["temperature_left_out"] and isinstance(got[0], Variant)
        else:
            expected = before.get(stage.name, ())
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected, strict=True)), stage.name
        assert tuple(stage.variants) == got and all(a is b for a, b in zip(stage.variants, got, strict=True))


def test_a_lazy_reference_is_resolved_once_in_order_and_frozen():
    from attncli.core.variants import left_out

    lazy = Lazy("attncli.core.variants.left_out:SINK_LEFT_OUT", "attncli.core.variants.left_out:CLIP_LEFT_OUT")
    assert resolved(lazy) == (left_out.SINK_LEFT_OUT, left_out.CLIP_LEFT_OUT) and resolved(lazy) is resolved(lazy)
    made = Lazy("attncli.core.variants.left_out:temperature_left_out", args=(lambda a, spec: a["q"], "_t"))
    first = tuple(made)
    assert first[0].name == "temperature_left_out" and tuple(made)[0] is first[0]  # made once, not per reading
    assert first[0].apply(None, {"q": 3.0}, {}, lambda spec, a: {"query_temperature": 1.5}) == {
        "query_temperature": 1.5, "_t": 3.0}  # the queries as they were, under the key the stage writes
    with pytest.raises(AttributeError):
        lazy.names = ()
    assert copy.deepcopy(lazy) is lazy and copy.copy(lazy) is lazy
    assert list(Lazy()) == []


def test_compute_imports_no_variant_until_a_stage_reads_its_variants():
    """In a fresh process: ``compute FILE --format json`` loads no module of core/variants/; reading the scale
    stage's variants afterwards does (so the check itself can fail)."""
    code = ("import json, sys\n"
            "from attncli.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "before = sorted(m for m in sys.modules if m.startswith('attncli.core.variants'))\n"
            "from attncli.core.stages import BY_NAME\n"
            "names = [v.name for v in BY_NAME['scale'].variants]\n"
            "after = sorted(m for m in sys.modules if m.startswith('attncli.core.variants'))\n"
            "print(json.dumps([before, after, names]), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, "compute", str(EXAMPLES / "illustrated.yaml"), "--format",
                           "json"], capture_output=True, text=True, timeout=600,
                          env={key: value for key, value in os.environ.items() if not key.endswith("_COMPLETE")}
                          | {"ATTNCLI_LANG": "en"})
    before, after, names = json.loads(done.stderr.strip().splitlines()[-1])
    assert json.loads(done.stdout)["weights"][0][0][0] > 0  # (the run was a real one)
    assert before == []
    assert after == ["attncli.core.variants", "attncli.core.variants.backward", "attncli.core.variants.latent",
                     "attncli.core.variants.left_out", "attncli.core.variants.norms", "attncli.core.variants.scale"]
    assert names[:2] == ["scale_left_out", "scale_added"] and "softcap_left_out" in names
