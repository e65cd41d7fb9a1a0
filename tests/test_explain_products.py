"""explain's written-out products against the Trace, number by number (no snapshot): step 6's a_j × v_j = a_j·v_j
for every key, and the backward step's D = dh·h and dZ = a·(dA − D) (with ``latent``, dc_KV and dk_r), for queries
of the first and the last head of documents with a gradient: each figure is the Trace's as printed, each product
holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from backward_reference import document
from test_latent import D_MODEL
from test_latent import document as latent_document
from typer.testing import CliRunner

import attncli
from attncli.cli.main import app

NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
VECTOR = rf"\[((?:{NUMBER}|…)(?:, (?:{NUMBER}|…))*)\]"
PRECISION = 4
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def documents() -> dict[str, dict]:
    grads = yaml.safe_load((EXAMPLES / "backward" / "grads.yaml").read_text(encoding="utf-8"))
    made = {"grads.yaml": grads}
    for features in ({"sinks", "causal"}, {"gqa", "mask_matrix", "softcap"}, {"context", "rope", "gate"},
                     {"qk_norm", "window", "temperature", "add_norm"}):
        made["+".join(sorted(features))] = document(features, 3)
    doc = latent_document(3, n=5)
    doc["gradient"] = np.random.default_rng(3).normal(size=(5, D_MODEL))
    made["latent"] = doc
    return made


DOCUMENTS = documents()


def plain(doc: dict):
    if isinstance(doc, dict):
        return {key: plain(value) for key, value in doc.items()}
    return doc.tolist() if isinstance(doc, np.ndarray) else doc


@pytest.fixture(scope="module", params=sorted(DOCUMENTS))
def case(request, tmp_path_factory):
    """(the document's file, its Trace)."""
    path = tmp_path_factory.mktemp("explain") / "doc.json"
    path.write_text(json.dumps(plain(DOCUMENTS[request.param])))
    return path, attncli.compute(str(path))


def explained(path, step: str, query: int, head: int) -> dict:
    result = CliRunner().invoke(app, ["explain", str(path), "--step", step, "--query", str(query), "--head",
                                      str(head), "--format", "json", "--lang", "en", "-p", str(PRECISION)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def shown(text: str, want: float, where: str) -> None:
    """``text`` is ``want`` as printed: to half a unit of its last decimal (or of its e-notation's)."""
    got = float(text)
    unit = 10.0 ** -PRECISION * (abs(got) if "e" in text else 1.0)
    assert abs(got - want) <= 0.51 * unit + 1e-12, f"{where}: {text} written for {want}"


def shown_vector(text: str, want: np.ndarray, where: str) -> None:
    parts = text.split(", ")
    if "…" in parts:  # a long vector keeps its first and last entries
        cut = parts.index("…")
        parts, want = parts[:cut] + parts[cut + 1:], np.concatenate([want[:cut], want[len(want) - 2:]])
    assert len(parts) == len(want), f"{where}: {text} for {want}"
    for part, value in zip(parts, want, strict=True):
        shown(part, float(value), where)


def heads_and_queries(trace):
    """The first and the last query of the first head, two of the last head (0-based)."""
    h, n = trace.spec.heads - 1, trace.spec.n
    return sorted({(0, 0), (0, n - 1), (h, n // 2), (h, n - 1)})


def test_step_6_each_weight_times_its_value_row(case):
    """``key: a_j × [v_j] = [a_j·v_j]``: the key's token, its weight in this row, its value row, their product."""
    path, trace = case
    spec = trace.spec
    for h, i in heads_and_queries(trace):
        lines = explained(path, "6", i + 1, h + 1)["lines"]
        v = trace.values[h // (spec.heads // spec.kv_heads)]  # the query head's key/value head
        for j, line in enumerate(line for line in lines if line != "…"):
            where = f"head {h + 1} query {i + 1} line {j + 1}: {line}"
            found = re.fullmatch(rf"(.+): ({NUMBER}) × {VECTOR} = {VECTOR}", line)
            assert found, where
            token, a, v_j, av = found.groups()
            assert token == spec.context_tokens[j], where
            shown(a, trace.weights[h, i, j], where)
            shown_vector(v_j, v[j], where)
            shown_vector(av, trace.weights[h, i, j] * v[j], where)


def test_the_backward_step_D_and_dZ(case):
    """``q: D = dh·h = [dH_i]·[H_i] = D_i`` and ``q, k: dZ = a·(dA − D) = a_ij·(dA_ij − D_i) = dZ_ij`` for the key
    it weighs most; with latent, ``k: dc_KV = … = [dc_KV_j], dk_r = Σ_h dk_r,h = […]``."""
    path, trace = case
    spec, g = trace.spec, trace.gradients
    for h, i in heads_and_queries(trace):
        data = explained(path, "backward", i + 1, h + 1)
        i = data["query"] - 1  # (a query that sees one key alone is followed only when asked for, as here)
        lines = data["lines"]
        where = f"head {h + 1} query {i + 1}: {lines}"
        found = re.fullmatch(rf"(.+): D = dh·h = {VECTOR}·{VECTOR} = ({NUMBER})", lines[0])
        assert found and found[1] == spec.tokens[i], where
        shown_vector(found[2], g["grad_head_outputs"][h, i], where)
        shown_vector(found[3], trace.head_outputs[h, i], where)
        shown(found[4], g["delta"][h, i], where)
        assert g["delta"][h, i] == pytest.approx(g["grad_head_outputs"][h, i] @ trace.head_outputs[h, i], abs=1e-12)
        j = int(np.argmax(trace.weights[h, i]))  # (a masked key's weight is 0)
        found = re.fullmatch(rf"(.+), (.+): dZ = a·\(dA − D\) = ({NUMBER})·\(({NUMBER}) − \(?({NUMBER})\)?\) = "
                             rf"({NUMBER})", lines[1])
        assert found and found[1] == spec.tokens[i] and found[2] == spec.context_tokens[j], where
        a, d_a, delta, d_z = (float(x) for x in found.groups()[2:])
        shown(found[3], trace.weights[h, i, j], where)
        shown(found[4], g["grad_weights"][h, i, j], where)
        shown(found[5], g["delta"][h, i], where)
        shown(found[6], g["grad_scaled_scores"][h, i, j], where)
        assert a * (d_a - delta) == pytest.approx(d_z, abs=2e-4 * (1 + abs(d_a) + abs(delta)))
        if spec.latent is not None:
            found = re.search(rf"(.+): dc_KV = .* = {VECTOR},\s+dk_r = Σ_h dk_r,h = {VECTOR}", lines[-1])
            assert found and found[1] == spec.context_tokens[j], where
            shown_vector(found[2], g["grad_latent_kv"][j], where)
            shown_vector(found[3], g["grad_keys"][:, j, spec.latent.d_nope:].sum(axis=0), where)
