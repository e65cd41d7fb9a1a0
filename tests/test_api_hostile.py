"""The Python API under hostile input: every public function, given None, a string, an object array, an empty
array, NaN, a 0-d array or a huge shape (a broadcast view: no memory until it is computed with), raises AttnError
or TypeError naming the argument — never numpy's own error, a RecursionError, a MemoryError or a silent NaN."""

from __future__ import annotations

import numpy as np
import pytest

import attncli

OK = np.ones((3, 4))
HOSTILE = {  # name: (value, what the message says of it)
    "None": (None, "None"),
    "a string": ("abc", "string"),
    "an object array": (np.array([[1.0, None]], dtype=object), "Python objects"),
    "an empty array": (np.zeros((0, 4)), "empty"),
    "NaN": (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
    "a 0-d array": (np.array(2.0), "number"),
    "a huge shape": (np.broadcast_to(0.0, (2_000_000, 4)), "memory"),
    "complex numbers": (np.ones((2, 4)) + 1e9j, "complex"),
}


def _raises_naming(call, argument: str, said: str):
    with pytest.raises((attncli.AttnError, TypeError)) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(f"{argument}: ") or f": {argument}: " in message, message
    assert said.lower() in message.lower(), message
    return message


@pytest.mark.parametrize("argument", ["q", "k", "v"])
@pytest.mark.parametrize("case", HOSTILE)
def test_attention_refuses_each_hostile_array_naming_it(case, argument):
    value, said = HOSTILE[case]
    arrays = {"q": OK, "k": OK, "v": OK} | {argument: value}
    if case == "a huge shape":  # the weights (n × m) are what would not fit: refused before they are made
        arrays = {name: np.broadcast_to(0.0, (2_000_000, 4)) for name in "qkv"}
        argument = "the weights"
    _raises_naming(lambda: attncli.attention(arrays["q"], arrays["k"], arrays["v"]), argument, said)


@pytest.mark.parametrize("case", ["None", "a string", "an object array", "NaN", "a 0-d array", "complex numbers"])
def test_attention_refuses_a_hostile_mask_or_scale(case):
    value, _ = HOSTILE[case]
    with pytest.raises(attncli.AttnError, match="^allowed: "):
        attncli.attention(OK, OK, OK, allowed=np.ones((3, 3)) if case == "None" else value)
    if case != "None":  # (None is the default scale)
        with pytest.raises(attncli.AttnError, match="^scale: "):
            attncli.attention(OK, OK, OK, scale=value)


def test_attention_refuses_inf_and_a_query_row_of_minus_inf_instead_of_returning_nan():
    q = OK.copy()
    q[1] = -np.inf  # the case: the weights of this row were NaN, silently
    assert "holds -inf at [1, 0]" in _raises_naming(lambda: attncli.attention(q, OK, OK), "q", "finite")
    k = OK.copy()
    k[2, 3] = np.inf
    assert "holds inf at [2, 3]" in _raises_naming(lambda: attncli.attention(OK, k, OK), "k", "finite")
    _raises_naming(lambda: attncli.attention(OK, OK, OK, scale=float("nan")), "scale", "finite")


def test_attention_overflowing_scores_is_an_error_not_nan():
    big = np.full((2, 3), 1e200)  # finite inputs whose q·kᵀ is beyond float64
    with pytest.raises(attncli.AttnError, match="overflow float64"):
        attncli.attention(big, big, OK[:2, :3])


def test_attention_with_lists_of_numbers_still_works():
    out, weights = attncli.attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [3.0]], scale=1.0)
    e = np.exp([1.0, 0.0])
    assert np.allclose(weights, [e / e.sum()], rtol=1e-14) and np.allclose(out, [[(e[0] + 3 * e[1]) / e.sum()]])


@pytest.mark.parametrize("case", HOSTILE)
def test_compute_refuses_each_hostile_array_as_a_documents_matrix(case):
    value, said = HOSTILE[case]
    said = {"None": "required", "a string": "neither a matrix", "a 0-d array": "single number"}.get(case, said)
    if case == "a huge shape":  # read (a view costs nothing), but its n × n scores are refused before they are made
        refused = r"^attncli.compute needs the scores .* 2000000 × 2000000, .*memory"
        with pytest.raises(attncli.AttnError, match=refused):
            attncli.compute({"inputs": value})
        return
    _raises_naming(lambda: attncli.compute({"inputs": value}), "inputs", said)


@pytest.mark.parametrize("function", [attncli.compute, attncli.load])
@pytest.mark.parametrize("case", ["None", "an object array", "NaN", "a 0-d array", "complex numbers"])
def test_compute_and_load_refuse_what_is_not_a_document_naming_it(function, case):
    with pytest.raises(TypeError, match="^document: expected a path or a mapping"):
        function(HOSTILE[case][0])


def test_a_mapping_or_list_that_holds_itself_is_an_attn_error_not_a_recursion_error():
    doc = {"inputs": [[1.0, 2.0]]}
    doc["weights"] = doc
    with pytest.raises(attncli.AttnError, match=r"^<dict>: weights: holds itself"):
        attncli.compute(doc)
    rows = [[1.0, 2.0]]
    rows.append(rows)
    with pytest.raises(attncli.AttnError, match=r"^<dict>: inputs\[1\]: holds itself"):
        attncli.compute({"inputs": rows})
    shared = [1.0, 2.0]  # the same row twice is not a cycle
    assert attncli.compute({"inputs": [shared, shared], "scale": "none"}).weights.shape == (1, 2, 2)


@pytest.mark.parametrize("case", HOSTILE)
def test_to_dict_and_show_refuse_what_is_not_a_trace_naming_it(case):
    for function in (attncli.to_dict, attncli.show):
        with pytest.raises(TypeError, match="^trace: expected what attncli.compute returns"):
            function(HOSTILE[case][0])
    with pytest.raises(TypeError, match="^trace: .* not an int"):
        attncli.to_dict(5)
    from attncli import notebook

    for function in (notebook.page, notebook.inline):
        with pytest.raises(TypeError, match="^trace: expected what attncli.compute returns"):
            function(HOSTILE[case][0])


@pytest.mark.parametrize("case", HOSTILE)
def test_set_language_refuses_what_is_not_a_language_naming_it(case):
    if case == "None":  # (None is the environment's language again)
        attncli.set_language(None)
        return
    with pytest.raises(attncli.AttnError, match="^lang: .* is not a language attncli speaks") as caught:
        attncli.set_language(HOSTILE[case][0])
    assert len(str(caught.value)) < 200, str(caught.value)
    with pytest.raises(attncli.AttnError, match="^lang: the string 'fr' is not a language"):
        attncli.set_language("fr")


def test_to_dict_refuses_a_string_for_only():
    trace = attncli.compute({"inputs": [[1.0, 0.0], [0.0, 1.0]]})
    with pytest.raises(TypeError, match="^only: expected a list of key names"):
        attncli.to_dict(trace, only="weights")
    assert list(attncli.to_dict(trace, only=["weights"])).count("weights") == 1


KERNEL = np.ones((1, 3, 2, 4))  # (batch, seqlen, heads, dim)
KERNEL_HOSTILE = {  # the cases above, in the kernel functions' layout
    "None": (None, "NoneType"),
    "a string": ("abc", "str"),
    "an object array": (np.array([[1.0, None]], dtype=object), "object"),
    "NaN": (np.where(np.arange(4) == 2, np.nan, KERNEL), "holds nan at (0, 0, 0, 2)"),
    "a 0-d array": (np.array(2.0), "a number"),
    "complex numbers": (KERNEL + 1e9j, "complex"),
    "ragged rows": ([[1.0, 2.0], [3.0]], "not an array of numbers"),
}


@pytest.mark.parametrize("argument", ["q", "k", "v"])
@pytest.mark.parametrize("case", KERNEL_HOSTILE)
def test_reference_refuses_each_hostile_array_naming_it(case, argument):
    value, said = KERNEL_HOSTILE[case]
    arrays = {"q": KERNEL, "k": KERNEL, "v": KERNEL} | {argument: value}
    with pytest.raises((attncli.AttnError, TypeError)) as caught:
        attncli.reference(arrays["q"], arrays["k"], arrays["v"])
    message = str(caught.value)
    if case == "None" and argument != "q":  # k or v left out: the pair is named
        assert message == "k and v are needed (or k_cache and v_cache)"
    else:
        assert message.startswith(f"{argument} ") and said in message, message


def test_an_empty_sequence_is_an_empty_result_as_in_torch():
    r = attncli.reference(np.zeros((1, 0, 2, 4)), KERNEL, KERNEL)  # no queries: nothing to compute, nothing wrong
    assert r.out.shape == (1, 0, 2, 4) and r.lse.shape == (1, 2, 0)


@pytest.mark.parametrize("case", KERNEL_HOSTILE)
def test_merge_and_assert_close_refuse_each_hostile_array_naming_it(case):
    value, said = KERNEL_HOSTILE[case]
    lse = np.zeros((1, 2, 3))
    for call, name in ((lambda: attncli.merge([value], [lse]), "outs[0]"),
                       (lambda: attncli.merge([KERNEL], [value]), "lses[0]")):
        with pytest.raises((attncli.AttnError, TypeError)) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"{name} "), message
        if case != "NaN" or name == "outs[0]":
            assert said.replace("(0, 0, 0, 2)", "") in message.replace(" (0, 0, 2)", ""), message
    r = attncli.reference(KERNEL, KERNEL, KERNEL)
    if case == "None":  # out=None is out not given: nothing to judge, which is refused (never a silent pass)
        with pytest.raises(attncli.AttnError, match="given no result to judge"):
            attncli.assert_close(r, out=value)
        return
    if case == "NaN":  # a kernel's NaN is judged, and fails the verdict: it is what is being tested
        with pytest.raises(AssertionError, match=r"^out is outside the bf16 budget .* got nan"):
            attncli.assert_close(r, out=value)
        return
    with pytest.raises((attncli.AttnError, TypeError), match=r"^out (is|has|must)") as caught:
        attncli.assert_close(r, out=value)
    assert said in str(caught.value) or case == "ragged rows" and "same length" in str(caught.value)


def test_merge_takes_lists_and_assert_close_a_reference_and_something_to_judge():
    with pytest.raises(TypeError, match=r"^outs must be a list of arrays .* not ndarray"):
        attncli.merge(KERNEL, [np.zeros((1, 2, 3))])
    with pytest.raises(TypeError, match=r"^r must be what attncli.reference returned, not ndarray"):
        attncli.assert_close(KERNEL, out=KERNEL)
    r = attncli.reference(KERNEL, KERNEL, KERNEL)
    with pytest.raises(attncli.AttnError, match="given no result to judge"):  # never a silent pass
        attncli.assert_close(r)


def test_ctrl_c_stops_a_long_reference_within_a_block_not_the_whole_job():
    import signal
    import subprocess
    import sys
    import time

    script = ("import numpy as np, attncli, sys\n"
              "q = np.broadcast_to(0.0, (1, 200_000, 2, 4))\n"  # 2 heads × 4·10¹⁰ scores: minutes of work anywhere
              "print('started', flush=True)\n"
              "try:\n    attncli.reference(q, q, q)\nexcept KeyboardInterrupt:\n    print('stopped', flush=True)\n")
    from conftest import read_within

    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert read_within(child.stdout, 100, seconds=120).startswith(b"started")
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        start = time.perf_counter()
        out, _ = child.communicate(timeout=60)  # the whole job takes far longer; one block, well under a second
    finally:
        child.kill()
    assert out.strip() == b"stopped" and time.perf_counter() - start < 60
