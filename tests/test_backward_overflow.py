"""A gradient too large for float64 is an error naming the first gradient that overflowed and its cell, on the full
and the streamed paths and through every command (as the forward's overflow is), never inf or NaN in a result."""

from __future__ import annotations

import pytest
import yaml

import attncli
from attncli.cli.main import main
from attncli.core import stream, stream_backward
from attncli.core.errors import AttnError
from attncli.core.pipeline import attend

BIG = 1.7e308  # finite, but two of them summed are not
DOC = {"inputs": [[1, 0], [0, 1], [1, 1]], "mask": "causal", "gradient": [[BIG, BIG] for _ in range(3)]}


def test_the_full_path_names_the_first_gradient_and_cell():
    # dA = dH·Vᵀ with V = X: row 1 · key 3 = BIG·1 + BIG·1 overflows; keys 1 and 2 are BIG, finite
    with pytest.raises(AttnError) as raised:
        attend(attncli.load(DOC))
    assert str(raised.value).startswith("gradient: grad_weights overflows float64 in the backward pass at head 1, "
                                        "row 1, column 3;")


def test_a_finite_gradient_just_below_the_edge_is_computed():
    doc = {**DOC, "gradient": [[BIG / 4, BIG / 4] for _ in range(3)]}
    grads = attend(attncli.load(doc)).gradients
    assert grads["grad_weights"][0, 0, 2] == pytest.approx(BIG / 2, rel=1e-12)  # BIG/4 · 1 + BIG/4 · 1


@pytest.mark.parametrize("tiles", [(256, 512), (2, 3)])
@pytest.mark.parametrize("keep", [None, ["grad_values"]])
def test_the_streamed_path_refuses_it_too(monkeypatch, tiles, keep):
    monkeypatch.setattr(stream_backward, "ROWS", tiles[0])
    monkeypatch.setattr(stream_backward, "KEYS", tiles[1])
    with pytest.raises(AttnError, match=r"^gradient: grad_\w+ overflows float64 in the backward pass at head 1, "):
        stream.attend_streamed(attncli.load(DOC), keep=keep)


def _cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as leaving:
        main(list(args))
    out, err = capsys.readouterr()
    return leaving.value.code, out, err


@pytest.mark.parametrize("args", [
    ["compute", "-f", "json"], ["compute", "--only", "dV"], ["compute", "-o", "out.npz"], ["compute", "-o", "out.json"],
    ["heatmap", "--of", "grad_weights"], ["explain", "--step", "backward"], ["page", "-o", "out.html"]])
def test_every_command_says_it_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, args):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g2.yaml").write_text(yaml.safe_dump(DOC))
    code, out, err = _cli(capsys, args[0], "g2.yaml", *args[1:])
    assert code == 2 and out == ""
    assert err.startswith("Error: g2.yaml: gradient: grad_") and "overflows float64 in the backward pass" in err
    assert err.count("\n") == 1 and "nan" not in err.lower() and "inf" not in err.replace("float", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g2.yaml"]
