"""attncli.assert_close: the verdict of ``attncli check --against --dtype`` as an assertion (the same answer and budget
on the same numbers), its message (quantity, worst cell, both values, budget), and docs/kernels.md's opening
pytest, run as it is written there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import attncli
from attncli.cli.app import app
from attncli.core.emulate import rounded

KERNELS_MD = Path(__file__).resolve().parent.parent / "docs" / "kernels.md"
CLI_KEYS = {"out": "head_outputs", "lse": "lse", "dq": "grad_kernel_queries", "dk": "grad_kernel_keys",
            "dv": "grad_values"}


def opening_pytest() -> str:
    """The first ```python block of docs/kernels.md."""
    return re.search(r"```python\n(.*?)```", KERNELS_MD.read_text(encoding="utf-8"), re.S).group(1)


def test_kernels_md_opens_with_a_15_line_pytest_that_passes(tmp_path):
    """The block, written out as the file a kernel engineer would save, passes under pytest."""
    text = KERNELS_MD.read_text(encoding="utf-8")
    code = opening_pytest()
    assert text.index("```python") < text.index("```bash")  # the page opens with it
    assert len(code.strip().splitlines()) <= 15
    path = tmp_path / "test_my_kernel.py"
    path.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b1 passed\b", done.stdout), done.stdout


def test_the_same_pytest_fails_on_a_kernel_with_a_bug():
    """The doc's kernel stand-in given queries twice as large (a kernel with the scale doubled): outside the budget,
    named at its worst cell."""
    namespace: dict = {}
    exec(compile(opening_pytest(), str(KERNELS_MD), "exec"), namespace)
    rng = np.random.default_rng(0)
    q, k, v, dout = (rng.normal(size=s) for s in ((2, 64, 8, 32), (2, 64, 2, 32), (2, 64, 2, 32), (2, 64, 8, 32)))
    out, dq, dk, dv = namespace["my_kernel"](2 * q, k, v, dout)
    r = attncli.reference(q, k, v, causal=True, dout=dout)
    with pytest.raises(AssertionError, match=r"^out is outside the bf16 budget at batch \d+, head \d+, row \d+"):
        attncli.assert_close(r, dtype="bfloat16", out=out, dq=dq, dk=dk, dv=dv)


def _problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    q, k, v, d_o = (rng.normal(size=s) for s in ((4, 6, 8), (2, 6, 8), (2, 6, 8), (4, 6, 8)))
    sinks = rng.normal(size=4)
    doc = {"queries": q.tolist(), "keys": k.tolist(), "values": v.tolist(), "mask": "causal", "softcap": 5.0,
           "sinks": sinks.tolist(), "gradient": d_o.tolist()}
    t = lambda x: x.transpose(1, 0, 2)[None]  # noqa: E731  (h, n, d) -> (1, n, h, d): bshd
    r = attncli.reference(t(q), t(k), t(v), causal=True, softcap=5.0, sinks=sinks, dout=t(d_o))
    return doc, r, t


@pytest.mark.parametrize("size", [0.0, 1e-3, 3e-3, 1e-2, 1e-1])
def test_the_command_line_verdict_and_assert_close_agree(tmp_path, size):
    doc, r, t = _problem()
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    rng = np.random.default_rng(1)
    got = {key: np.asarray(getattr(r, key)) for key in CLI_KEYS}
    got = {key: a + size * rng.normal(size=a.shape) * (rng.random(a.shape) < 0.2) for key, a in got.items()}
    untransposed = {CLI_KEYS[key]: (a[0] if key == "lse" else a[0].transpose(1, 0, 2)) for key, a in got.items()}
    np.savez(tmp_path / "result.npz", **untransposed)
    checked = CliRunner().invoke(app, ["check", str(path), "--against", str(tmp_path / "result.npz"), "--dtype",
                                       "bf16", "--format", "json"])
    findings = {f["key"]: f for f in json.loads(checked.stdout)["findings"]}
    for key, array in got.items():
        cli = findings[CLI_KEYS[key]]
        try:
            found = attncli.assert_close(r, dtype="bfloat16", **{key: array})[key]
            within = True
        except AssertionError as e:
            within = False
            budget = float(re.search(r"budget ([0-9.e+-]+) \(", str(e)).group(1))
            assert budget == pytest.approx(cli["budget"], rel=1e-2)
        else:
            assert found.budget == pytest.approx(cli["budget"], rel=1e-9)
        assert within is cli["within"], (key, size)


def test_the_message_names_the_quantity_the_cell_both_values_and_the_budget():
    _, r, _ = _problem()
    dk = np.array(r.dk)
    dk[0, 3, 1, 2] += 0.5  # batch 0, key 3, key/value head 1, column 2
    with pytest.raises(AssertionError) as e:
        attncli.assert_close(r, dtype="bf16", out=r.out, dk=dk)
    message = str(e.value)
    assert message.startswith("dk is outside the bf16 budget at batch 0, head 1, key 3, column 2")
    assert repr(float(r.dk[0, 3, 1, 2])) in message and repr(float(dk[0, 3, 1, 2])) in message
    assert "budget" in message


def test_an_emulated_bf16_kernel_is_within_and_torch_dtypes_are_names():
    doc, r, t = _problem(2)
    q, k, v, d_o = (np.asarray(doc[key]) for key in ("queries", "keys", "values", "gradient"))
    r16 = attncli.reference(*(t(rounded(x, "bf16")) for x in (q, k, v)), causal=True, softcap=5.0,
                            sinks=np.asarray(doc["sinks"]), dout=t(rounded(d_o, "bf16")))
    found = attncli.assert_close(r, dtype="bf16", **{key: rounded(getattr(r16, key), "bf16") for key in CLI_KEYS})
    assert set(found) == set(CLI_KEYS) and all(f.within for f in found.values())
    with pytest.raises(ValueError, match="dtype"):
        attncli.assert_close(r, dtype="int8", out=r.out)
    with pytest.raises(ValueError, match=r"out is 6 × 4 × 8 but the reference's is 1 × 6 × 4 × 8"):
        attncli.assert_close(r, out=np.asarray(r.out)[0])


def test_score_mod_and_dropout_have_an_eager_budget_too():
    rng = np.random.default_rng(3)
    q, k, v, d_o = (rng.normal(size=(2, 5, 2, 4)) for _ in range(4))
    keep = rng.random((2, 2, 5, 5)) > 0.2
    r = attncli.reference(q, k, v, score_mod=lambda z, b, h, i, j: z * (1 + h) - 0.1 * abs(i - j),
                          dropout_p=0.2, dropout_mask=keep, dout=d_o)
    assert all(f.within for f in attncli.assert_close(r, out=r.out, dq=r.dq, dk=r.dk).values())
    with pytest.raises(AssertionError, match="dq is outside"):
        attncli.assert_close(r, dq=np.asarray(r.dq) * 1.1)
