"""init --integers: whole numbers whose softmax is worth working out by hand (no row's largest weight above 0.95).

The weights are recomputed here from the document's own numbers with numpy (S = X·W_Q·(C·W_K)ᵀ head by head, scale
none, a softmax per row), not by attncli's pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from attncli.cli.main import app


def _weights(doc: dict) -> list[np.ndarray]:
    x = np.array(doc["inputs"], dtype=float)
    c = np.array(doc.get("context", doc["inputs"]), dtype=float)
    h = doc["heads"]
    wq, wk = (np.array(doc["weights"][name], dtype=float) for name in ("query", "key"))
    d = wq.shape[1] // h
    rows = []
    for head in range(h):
        s = (x @ wq[:, head * d:(head + 1) * d]) @ (c @ wk[:, head * d:(head + 1) * d]).T
        if doc["mask"] == "causal":
            s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        rows.append(e / e.sum(axis=1, keepdims=True))
    return rows


@pytest.mark.parametrize("options", [
    ["--tokens", "a b c", "--d-model", "2"], [], ["--n", "6", "--d-model", "8", "--heads", "2"],
    ["--n", "5", "--mask", "causal"], ["--n", "3", "--context", "4"], ["--n", "8", "--d-model", "8", "--seed", "5"],
], ids=lambda o: " ".join(o) or "default")
def test_no_row_is_saturated(runner, options):
    result = runner.invoke(app, ["init", *options, "--integers"])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert doc["scale"] == "none"
    for w in _weights(doc):
        choice = np.arange(len(w)) >= (1 if doc["mask"] == "causal" else 0)  # causal: query 1 has one key
        assert w.max(axis=1)[choice].max() <= 0.95
    numbers = [v for m in [doc["inputs"], *doc["weights"].values()] for row in m for v in row]
    assert all(type(v) is int and -2 <= v <= 2 for v in numbers)
    assert all(-1 <= v <= 1 for name in ("query", "key") for row in doc["weights"][name] for v in row)


def test_max_weight_one_keeps_the_first_draw_and_the_same_seed_the_same_numbers(runner):
    from attncli.teach.starter_document import whole_numbers

    first = yaml.safe_load(runner.invoke(app, ["init", "--n", "3", "--integers", "--max-weight", "1"]).stdout)
    assert first["inputs"] == whole_numbers(0, (3, 4))  # the seed alone, as before: attempt 0
    assert first["weights"]["query"] == whole_numbers(1, (4, 4), largest=1)
    again = runner.invoke(app, ["init", "--n", "3", "--integers"]).stdout
    assert again == runner.invoke(app, ["init", "--n", "3", "--integers"]).stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--n", "3", "--integers", "--max-weight", "0.2"], "--max-weight: is 0.2: a row over 3 keys"),
    (["--n", "3", "--max-weight", "0.5"], "--max-weight: needs --integers"),
])
def test_a_rule_that_cannot_hold_is_one_line(runner, args, message):
    result = runner.invoke(app, ["init", *args])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and message in result.stderr


def test_sizes_too_wide_for_whole_numbers_are_refused(runner, monkeypatch):
    from attncli.teach import starter

    monkeypatch.setattr(starter, "ATTEMPTS", 1)  # the first draw of these sizes saturates (checked below)
    result = runner.invoke(app, ["init", "--n", "8", "--d-model", "8", "--integers"])
    assert result.exit_code == 2 and "--integers: no draw of whole numbers in 1 keeps every weight" in result.stderr
