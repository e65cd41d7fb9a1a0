"""Where issue 27's n = 512 gap goes: attncli's computation with and without its exponentials, against torch.

    python benchmarks/exp_share.py            # n = 512, d_model 768, 12 heads of 64, one thread each, 21 rounds

The layer of benchmarks/inprocess.py (projections, attention, W_O; float64, no mask, output only), one thread
each.  Three runs in rounds, the order reversed every other round: attncli (``attend_streamed``), the same with
the exp of its tiles replaced by nothing (the numbers are then wrong: this is a measurement of time only),
and torch (projections and the fused SDPA kernel).  Then numpy's and torch's exp alone over 12 × n × n float64
values (and mkl_umath's, where attncli[fast-exp] is installed: attncli takes it then; ATTNCLI_EXP=numpy
measures numpy's).  The difference of the first two is what attncli's exponentials cost; the rest of attncli is compared
with the rest of torch.  It asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N, HEADS, D_K, ROUNDS = 512, 12, 64, 21


def main() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (before numpy starts)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import numpy as np
    import torch
    from cases import write_inputs
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import attncli.core.exponential as exponential
    import attncli.core.tiles as tiles
    from attncli.core.stream import attend_streamed
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    torch.set_num_threads(1)
    vectorised_exp(exponential)
    folder = Path(tempfile.mkdtemp(prefix="attncli-exp-"))
    write_inputs(folder, [N])
    spec = build_spec(read_document(str(folder / f"doc{N}.yaml")))
    x = torch.from_numpy(np.load(folder / f"x{N}.npy"))
    w = {c: torch.from_numpy(np.load(folder / f"w{c}.npy")) for c in "qkvo"}

    def torch_layer():
        q, k, v = ((x @ w[c]).view(1, N, HEADS, D_K).transpose(1, 2) for c in "qkv")
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            h = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return h[0].transpose(0, 1).reshape(N, HEADS * D_K) @ w["o"]

    def no_exp(values):  # the exp tiles.py takes (attncli.core.exponential.exp_for), leaving its tile as it is
        return lambda z, out=None: z if out is None else out

    def attncli():
        return attend_streamed(spec, threads=1).output

    def attncli_without_exp():
        chosen, tiles.exp_for = tiles.exp_for, no_exp
        try:
            return attend_streamed(spec, threads=1).output
        finally:
            tiles.exp_for = chosen

    runs = (attncli, attncli_without_exp, torch_layer)
    for run in runs:
        run()  # (warmed up)
    seconds: dict[str, list[float]] = {run.__name__: [] for run in runs}
    for r in range(ROUNDS):
        for run in runs if r % 2 else runs[::-1]:
            start = time.perf_counter()
            run()
            seconds[run.__name__].append(time.perf_counter() - start)
    load = open("/proc/loadavg").read().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"n = {N}, d_model {HEADS * D_K}, {HEADS} heads of {D_K}, float64, one thread each, {ROUNDS} rounds, "
          f"load average {load}:")
    for name, values in seconds.items():
        print(f"  {name:22s} median {1e3 * statistics.median(values):6.1f} ms  best {1e3 * min(values):6.1f} ms")
    z = np.random.default_rng(0).normal(scale=3.0, size=HEADS * N * N)
    out, zt = np.empty_like(z), torch.from_numpy(z)

    def median_ms(f) -> float:
        times = []
        for _ in range(9):
            start = time.perf_counter()
            f()
            times.append(time.perf_counter() - start)
        return 1e3 * statistics.median(times)

    vectorised = exponential.exp_for(0)
    mkl = "" if vectorised is np.exp else f"mkl_umath {median_ms(lambda: vectorised(z, out=out)):.1f} ms, "
    print(f"  exp of {HEADS} × {N} × {N} float64 values: numpy {median_ms(lambda: np.exp(z, out=out)):.1f} ms, "
          f"{mkl}torch {median_ms(lambda: torch.exp(zt)):.1f} ms")
    print(f"  attncli's exp: {'numpy' if vectorised is np.exp else 'mkl_umath (attncli[fast-exp])'}")


def vectorised_exp(exponential) -> None:
    """Take mkl_umath's exp from the first call if it is installed (attncli.core.exponential imports it once a
    process has done enough exponentials to pay for the import; a benchmark of many rounds gets there anyway)."""
    if exponential.os.environ.get("ATTNCLI_EXP", "").lower() != "numpy":
        exponential.exp_for(exponential.WORTH)


if __name__ == "__main__":
    main()
