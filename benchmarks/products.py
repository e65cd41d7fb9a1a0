"""numpy (its BLAS) against torch (MKL) on the operations of the n = 8192 layer, float64, one thread each, best of 9.

    python benchmarks/products.py

The projection product, a Q·Kᵀ and an e·V tile of core/tiles.py's shape, a square product, and exp: what each
library takes for the same arrays (docs/speed.md, "On a 2-core Intel Xeon"). A measurement, not a test.
"""

from __future__ import annotations

import os
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
import numpy as np
import torch

CASES = [("projection 8192x768 @ 768x768", (8192, 768), (768, 768)),
         ("Q.K^T tile 1024x64 @ 64x512", (1024, 64), (64, 512)),
         ("e.V tile 1024x512 @ 512x64", (1024, 512), (512, 64)),
         ("square 2048", (2048, 2048), (2048, 2048))]


def best(run, times: int = 9) -> float:
    """The least wall time of ``times`` calls of ``run`` (after one to warm up)."""
    run()
    least = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        run()
        least = min(least, time.perf_counter() - start)
    return least


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    for name, shape_a, shape_b in CASES:
        a, b = rng.random(shape_a), rng.random(shape_b)
        out = np.empty((shape_a[0], shape_b[1]))
        ta, tb, tout = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out.copy())
        mine = best(lambda: np.matmul(a, b, out=out))  # noqa: B023 (called at once)
        theirs = best(lambda: torch.matmul(ta, tb, out=tout))  # noqa: B023
        flop = 2 * shape_a[0] * shape_a[1] * shape_b[1]
        print(f"{name:32} numpy {flop / mine / 1e9:6.1f} GFLOP/s  torch {flop / theirs / 1e9:6.1f} GFLOP/s  "
              f"numpy/torch time {mine / theirs:.2f}", flush=True)
    z = -rng.random((1024, 512)) * 30
    e = np.empty_like(z)
    tz, te = torch.from_numpy(z), torch.from_numpy(e.copy())
    mine, theirs = best(lambda: np.exp(z, out=e)), best(lambda: torch.exp(tz, out=te))
    print(f"{'exp 1024x512':32} numpy {mine / z.size * 1e9:.2f} ns a value  "
          f"torch {theirs / z.size * 1e9:.2f} ns a value"
          f"  numpy/torch time {mine / theirs:.2f}")
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
