"""The cases of benchmarks/run.py, each run in a child process of its own (``run.py --case NAME``).

Each prints one JSON line: the seconds of the computation alone (and its CPU seconds), having written its
output to ``out_NAME{n}.npy`` in the folder for ``compare`` to check.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

D_MODEL, HEADS, D_K = 768, 12, 64

TORCH_SCRIPT = '''
import json, sys
import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
folder, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
causal = len(sys.argv) > 4 and sys.argv[4] == "causal"
x = torch.from_numpy(np.load(f"{folder}/x{n}.npy"))
w = {c: torch.from_numpy(np.load(f"{folder}/w{c}.npy")) for c in "qkvo"}
q, k, v = ((x @ w[c]).view(1, n, 12, 64).transpose(1, 2) for c in "qkv")  # 4-D: the fused kernel
assert SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=causal)) == SDPBackend.FLASH_ATTENTION
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # a fallback is an error
    h = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
y = h[0].transpose(0, 1).reshape(n, 768) @ w["o"]
if kind == "json":
    sys.stdout.write(json.dumps({"output": y.tolist()}) + "\\n")
else:
    np.save(f"{folder}/torch_out{n}.npy", y.numpy())
'''


def flops(n: int, causal: bool = False) -> float:
    """Q, K, V and output projections, Q·Kᵀ and A·V (multiply-adds count 2; causal: the cells a query sees)."""
    cells = n * (n + 1) / 2 if causal else n * n
    return 2 * n * D_MODEL * D_MODEL * 4 + 4 * HEADS * cells * D_K


# ---------------------------------------------------------------- the cases, each in its own process


def case_peak(n: int, folder: Path, causal: bool) -> dict:
    import numpy as np

    a = np.random.default_rng(0).random((n, n))
    a @ a
    best = min(_timed(lambda: a @ a) for _ in range(3))
    return {"seconds": best, "gflops": 2 * n**3 / best / 1e9}


def case_attncli(n: int, folder: Path, causal: bool) -> dict:
    """attend_streamed, with the library settings attncli's command makes before numpy is imported."""
    from attncli.cli.main import library_defaults

    library_defaults()
    import numpy as np

    from attncli.core.stream import attend_streamed
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    spec = build_spec(read_document(str(folder / f"{'causal' if causal else 'doc'}{n}.yaml")))
    y, seconds, cpu = _measured(lambda: attend_streamed(spec).output)
    np.save(folder / f"out_attncli{n}.npy", y)
    return {"seconds": seconds, "cpu": cpu}


def case_numpy(n: int, folder: Path, causal: bool) -> dict:
    """Plain numpy, queries in blocks of 256 so that one head's scores are 256 × n at a time."""
    import numpy as np

    x, w = _inputs(n, folder)

    def layer():
        q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]  # (n, 768) each
        heads = np.empty((n, D_MODEL))
        for h in range(HEADS):
            cols = slice(h * D_K, (h + 1) * D_K)
            for lo in range(0, n, 256):
                s = q[lo : lo + 256, cols] @ k[:, cols].T / np.sqrt(D_K)
                e = np.exp(s - s.max(axis=1, keepdims=True))
                heads[lo : lo + 256, cols] = (e / e.sum(axis=1, keepdims=True)) @ v[:, cols]
        return heads @ w["o"]

    y, seconds, cpu = _measured(layer)
    np.save(folder / f"out_numpy{n}.npy", y)
    return {"seconds": seconds, "cpu": cpu}


def case_numpy_full(n: int, folder: Path, causal: bool) -> dict:
    """Plain numpy keeping every h × n × n matrix, as a first implementation would."""
    import numpy as np

    x, w = _inputs(n, folder)

    def layer():
        q, k, v = ((x @ w[c]).reshape(n, HEADS, D_K).transpose(1, 0, 2) for c in "qkv")
        s = q @ k.transpose(0, 2, 1) / np.sqrt(D_K)  # (h, n, n)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        return (a @ v).transpose(1, 0, 2).reshape(n, D_MODEL) @ w["o"]

    y, seconds, cpu = _measured(layer)
    np.save(folder / f"out_numpy_full{n}.npy", y)
    return {"seconds": seconds, "cpu": cpu}


def case_torch(n: int, folder: Path, causal: bool, backend: str = "FLASH_ATTENTION") -> dict:
    """scaled_dot_product_attention on 4-D tensors, on ``backend`` (forced); which path torch chose by itself."""
    import numpy as np
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.set_num_threads(_cores())
    x = torch.from_numpy(np.load(folder / f"x{n}.npy"))
    w = {c: torch.from_numpy(np.load(folder / f"w{c}.npy")) for c in "qkvo"}
    probe = torch.zeros(1, HEADS, n, D_K, dtype=torch.float64)
    chosen = SDPBackend(torch._fused_sdp_choice(probe, probe, probe, is_causal=causal)).name

    def layer():
        q, k, v = ((x @ w[c]).view(1, n, HEADS, D_K).transpose(1, 2) for c in "qkv")  # (1, h, n, d)
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            h = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return h[0].transpose(0, 1).reshape(n, D_MODEL) @ w["o"]

    y, seconds, cpu = _measured(layer)
    np.save(folder / f"out_torch{'_math' if backend == 'MATH' else ''}{n}.npy", y.numpy())
    path = backend + (" (its own choice)" if chosen == backend else f", forced ({chosen} by itself)")
    return {"seconds": seconds, "cpu": cpu, "path": path}


def case_torch_math(n: int, folder: Path, causal: bool) -> dict:
    return case_torch(n, folder, causal, "MATH")


def case_inputs(n: int, folder: Path, causal: bool) -> dict:
    """Write the .npy inputs and the documents (here, so that the parent never holds numpy's memory)."""
    write_inputs(folder, [int(s) for s in os.environ["BENCH_SIZES"].split(",")])
    return {}


def case_compare(n: int, folder: Path, causal: bool) -> dict:
    """max |Δ| of each out_*{n}.npy against the torch (else numpy) output; the files are removed."""
    import numpy as np

    outputs = {path.name[4 : -len(f"{n}.npy")]: np.load(path) for path in folder.glob(f"out_*{n}.npy")}
    reference = outputs.get("torch", outputs.get("numpy"))
    for path in folder.glob(f"out_*{n}.npy"):
        path.unlink()
    return {name: float(np.abs(y - reference).max()) for name, y in outputs.items()}


def case_compare_files(n: int, folder: Path, causal: bool) -> dict:
    import numpy as np

    a, b = folder / f"attncli_out{n}.npy", folder / f"torch_out{n}.npy"
    diff = float(np.abs(np.load(a) - np.load(b)).max())
    a.unlink()
    b.unlink()
    return {"diff": diff}


CASES = {
    "inputs": case_inputs, "compare": case_compare, "compare-files": case_compare_files, "peak": case_peak,
    "attncli": case_attncli, "numpy": case_numpy, "numpy-full": case_numpy_full, "torch": case_torch,
    "torch-math": case_torch_math,
}
NAMES = {"attncli": "attncli (streamed)", "numpy": "numpy, blocks of 256", "numpy-full": "numpy, every h×n×n",
         "torch": "torch SDPA, fused", "torch-math": "torch SDPA, math path"}


def _measured(action) -> tuple:
    """(result, wall seconds, CPU seconds of the whole process meanwhile)."""
    cpu, start = time.process_time(), time.perf_counter()
    result = action()
    return result, time.perf_counter() - start, time.process_time() - cpu


def _inputs(n: int, folder: Path):
    import numpy as np

    return np.load(folder / f"x{n}.npy"), {c: np.load(folder / f"w{c}.npy") for c in "qkvo"}


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def write_inputs(folder: Path, sizes: list[int]) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for c in "qkvo":
        np.save(folder / f"w{c}.npy", rng.normal(0.0, D_MODEL**-0.5, (D_MODEL, D_MODEL)))
    for n in sizes:
        np.save(folder / f"x{n}.npy", rng.normal(size=(n, D_MODEL)))
        weights = "\n".join(f"  {name}: w{c}.npy" for name, c in zip(("query", "key", "value", "output"), "qkvo"))
        (folder / f"doc{n}.yaml").write_text(f"inputs: x{n}.npy\nheads: {HEADS}\nweights:\n{weights}\n")
        (folder / f"causal{n}.yaml").write_text(
            f"inputs: x{n}.npy\nheads: {HEADS}\nmask: causal\nweights:\n{weights}\n")
    (folder / "torch_layer.py").write_text(TORCH_SCRIPT)
