"""Hand mutations of the backward pass and of explain's products, each shown to be killed by the torch-free tests.

    python tests/mutations.py            every mutation; exit 1 when one survives
    python tests/mutations.py sink_sign  only those named
    python tests/mutations.py --tests tests/test_page_gradients.py sink_sign   against other tests

Each mutation replaces one piece of text (found once, in whichever module of attncli/core/ or attncli/teach/ holds it
now, so that a moved function is still found) in a temporary copy of the repository, and runs the tests that should
see it there, with torch and transformers made unimportable (their tests skip): a mutation is killed when a test
fails.  The unchanged copy runs the same tests first and must pass.  tests/test_mutations.py runs this (``slow``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ("tests/test_backward_differences.py",)
EXPLAIN = ("tests/test_explain_products.py",)


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str  # the slip it stands for
    old: str
    new: str
    tests: tuple[str, ...] = ORACLE


MUTATIONS = (
    Mutation("sink_sign", "the sink's gradient with the wrong sign: ds_h = +Σ_i σ_hi·D_hi",
             'return -np.einsum("hn,hn->h", sink, d)', 'return np.einsum("hn,hn->h", sink, d)'),
    Mutation("layer_norm_mean", "LayerNorm's backward without its mean term (as RMSNorm's)",
             '    if kind == "layer":\n        dx -= np.mean(dx_hat, axis=axes, keepdims=True)\n', ""),
    Mutation("rms_projection", "a norm's backward without the x̂·mean(dx̂ ⊙ x̂) term",
             "dx = dx_hat - x_hat * np.mean(dx_hat * x_hat, axis=axes, keepdims=True)", "dx = dx_hat.copy()"),
    Mutation("rope_sign", "RoPE's backward turning the first member the wrong way",
             "dx[..., first] = da * cos + db * sin", "dx[..., first] = da * cos - db * sin"),
    Mutation("softmax_delta_sign", "dZ = A ⊙ (dA + D)", "a * (d_a - d[..., None])", "a * (d_a + d[..., None])"),
    Mutation("softcap_derivative", "the soft cap's derivative 1 + tanh²", "return scale * d_z * (1.0 - t * t)",
             "return scale * d_z * (1.0 + t * t)"),
    Mutation("group_mean", "a key/value head's gradient averaged over its group instead of summed",
             "reshape(kv_heads, h // kv_heads, *x.shape[1:]).sum(axis=1)",
             "reshape(kv_heads, h // kv_heads, *x.shape[1:]).mean(axis=1)"),
    Mutation("gate_sigmoid", "the gate's σ′ = G(1 − G) taken as G", 'd["gate"] * g * (1.0 - g)', 'd["gate"] * g'),
    Mutation("clip_passes_all", "clip_qkv letting the gradient through where it cut",
             "(np.abs(unclipped[key]) <= spec.clip_qkv)", "(np.abs(unclipped[key]) >= 0)"),
    Mutation("residual_scale", "the residual's α forgotten on the added branch",
             "added: spec.residual_scale * d_r", "added: d_r"),
    Mutation("temperature_forgotten", "the kernel's queries' gradient not multiplied by τ",
             "dq if tau is None else dq * tau[None, :, None]", "dq"),
    Mutation("qk_norm_scope", "qk_norm over the projection backpropagated as over each head",
             'axes = (-1,) if norm.scope == "head" else (0, -1)', "axes = (-1,)"),
    Mutation("shared_rotary_key", "the shared rotary key's gradient averaged over the heads, not summed",
             "d_k[:, :, lat.d_nope:].sum(axis=0)", "d_k[:, :, lat.d_nope:].mean(axis=0)"),
    Mutation("output_bias", "b_O's gradient the mean of dY's rows", 'out["bias_output"] = dy.sum(axis=0)',
             'out["bias_output"] = dy.mean(axis=0)'),
    Mutation("explain_step_6_reversed", "explain's step 6: each weight written beside another key's value row",
             "trace.mixed_values[kv_head(spec, h)], weighted_values(trace, focus)",
             "trace.mixed_values[kv_head(spec, h)][::-1], weighted_values(trace, focus)", EXPLAIN),
    Mutation("explain_backward_reversed", "explain's backward step: D = dh·h with h's numbers reversed",
             "·{vector(trace.head_outputs[h, i], p)}", "·{vector(trace.head_outputs[h, i][::-1], p)}", EXPLAIN),
)

BLOCKED = ("torch", "transformers")  # made unimportable in the copy: the tests that need them skip


def copy_of_repository(to: Path) -> None:
    for name in ("attncli", "tests", "examples"):
        shutil.copytree(ROOT / name, to / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, to / name)
    blocked = to / "_blocked"
    blocked.mkdir()
    for name in BLOCKED:
        (blocked / f"{name}.py").write_text(f"raise ImportError('{name} is blocked: the mutations run without it')\n")


def place(root: Path, old: str) -> Path:
    """The one module of attncli/core/ or attncli/teach/ that holds ``old``, once."""
    found = [path for folder in ("core", "teach") for path in sorted((root / "attncli" / folder).rglob("*.py"))
             if old in path.read_text(encoding="utf-8")]
    counts = [path.read_text(encoding="utf-8").count(old) for path in found]
    if counts != [1]:
        raise SystemExit(f"mutation text found {sum(counts)} times (in {[str(p) for p in found]}): {old!r}")
    return found[0]


def run_tests(root: Path, tests: tuple[str, ...]) -> tuple[int, str]:
    """(pytest's exit code, the first failed test) in the copy, torch blocked, up to the first failure."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "_blocked"), str(root)]), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not slow",
               "--no-header", *tests]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    failed = re.search(r"^FAILED (\S+)", done.stdout, re.MULTILINE)
    return done.returncode, failed[1] if failed else done.stdout.strip().splitlines()[-1:]


def check_the_copy_is_imported(root: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "_blocked"), str(root)]))
    where = subprocess.run([sys.executable, "-c", "import attncli; print(attncli.__file__)"], cwd=root, env=env,
                           capture_output=True, text=True, timeout=120).stdout.strip()
    if not Path(where).is_relative_to(root):
        raise SystemExit(f"the copy's attncli is not the one imported: {where}")


def main(names: list[str], tests: tuple[str, ...] = ()) -> int:
    """Apply the mutations named (all: none named), each against its tests (or ``tests``); 0 when all are killed."""
    chosen = [m if not tests else Mutation(m.name, m.what, m.old, m.new, tests)
              for m in MUTATIONS if not names or m.name in names]
    with tempfile.TemporaryDirectory(prefix="attncli-mutations-") as folder:
        root = Path(folder)
        copy_of_repository(root)
        check_the_copy_is_imported(root)
        every = tuple(dict.fromkeys(test for m in chosen for test in m.tests))
        code, failed = run_tests(root, every)
        if code != 0:
            print(f"the unchanged copy fails ({code}): {failed}")
            return 2
        survived = []
        for m in chosen:
            path = place(root, m.old)
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace(m.old, m.new), encoding="utf-8")
            try:
                code, failed = run_tests(root, m.tests)
            finally:
                path.write_text(text, encoding="utf-8")
            verdict = "killed" if code == 1 else "SURVIVED" if code == 0 else f"error {code}"
            print(f"{m.name:26} {verdict:9} {path.relative_to(root)}: {m.what}" + (f"\n{'':37}by {failed}"
                                                                                  if code == 1 else ""))
            if code != 1:
                survived.append(m.name)
        print(f"{len(chosen) - len(survived)} of {len(chosen)} killed" + (f"; not: {survived}" if survived else ""))
        return 1 if survived else 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    other = ()
    if arguments[:1] == ["--tests"]:
        other, arguments = tuple(arguments[1].split(",")), arguments[2:]
    sys.exit(main(arguments, other))
