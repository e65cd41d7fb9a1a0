"""The computation alone, attncli against torch in one process, at a size where fixed costs show (issue 27).

    python benchmarks/inprocess.py                 # n = 512, 21 rounds, as many threads as cores, for both
    python benchmarks/inprocess.py --threads 1     # one thread each (attncli's and OpenBLAS's; torch's)
    python benchmarks/inprocess.py --n 2048 --rounds 31

One layer: d_model 768, 12 heads of 64, float64, W_Q, W_K, W_V and W_O, no mask, the output only.
attncli: :func:`attncli.core.stream.attend_streamed` on a Spec built beforehand from the document, the path
``attncli compute DOC --only output`` takes (``--only output`` needs no n × m matrix, so it always streams),
the projections included.  torch: ``x @ W`` for Q, K and V, ``scaled_dot_product_attention`` on its fused kernel
(forced, as in benchmarks/cases.py), and concat · W_O.  Both use the same number of threads: attncli its own
threads (one BLAS thread inside each, for the attention's jobs and the products' blocks of rows:
:mod:`attncli.core.threads`), torch ``set_num_threads`` (MKL's and its kernels' OpenMP threads).  Idle threads
sleep on both sides: attncli's OpenBLAS threads as its command sets them, torch's OpenMP threads by
``OMP_WAIT_POLICY=PASSIVE`` (:func:`idle_threads`; ``--torch-spin`` leaves them spinning).

The two run in rounds, one of each, the order alternating (AB BA …) so that neither always follows the
other, glibc's malloc thresholds fixed (:func:`steady_heap`); shown are the median wall time of each, the
ratio round by round (median, quartiles, range), the same for the CPU time of the process (all its threads,
spinning included: on a machine other work shares, it moves less than wall time), and the largest difference
of the outputs.  Also counted, not timed: the projection products of a document without weights at
n = 16384 (an omitted weight is the identity, whose product is not taken: 0).  This is a measurement: it
asserts nothing about time.  benchmarks/run.py runs it in a process of its own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
D_MODEL, HEADS, D_K = 768, 12, 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=21, help="rounds of one run each (default 21; at least 15)")
    parser.add_argument("--threads", type=int, help="threads for each (default: one per core)")
    parser.add_argument("--no-count", action="store_true", help="skip the count at n = 16384")
    parser.add_argument("--default-malloc", action="store_true", help="leave glibc's malloc thresholds as they are")
    parser.add_argument("--idle", type=float, default=0.0,
                        help="run a round only when the cores were idle this share of the 0.5 s before it (0 to 1; "
                             "default 0: always), waiting up to --patience seconds in all")
    parser.add_argument("--patience", type=float, default=600.0)
    parser.add_argument("--torch-spin", action="store_true",
                        help="leave torch's idle OpenMP threads spinning (its default; see idle_threads)")
    args = parser.parse_args()
    if not args.default_malloc:
        steady_heap()
    if args.threads:  # before numpy is imported: OpenBLAS reads it when it starts
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    if not args.torch_spin:
        idle_threads()
    sys.path.insert(0, str(ROOT))
    from attncli.cli.main import library_defaults

    library_defaults()  # the settings attncli's command makes before numpy is imported
    with tempfile.TemporaryDirectory(prefix="attncli-inprocess-") as folder:
        compare(args.n, max(args.rounds, 15), args.threads, Path(folder), args.idle, args.patience)
        if not args.no_count:
            count_identity_products(16384, Path(folder))


def steady_heap() -> bool:
    """Keep glibc's freed memory for reuse (arrays under 32 MiB from the heap, the heap never trimmed).

    By default glibc maps each array over a threshold afresh, and raises that threshold when such an array is
    freed: whether a run of either library finds its memory already mapped, or pays a page fault every 4 KiB,
    then depends on what the process freed before, the other library's arrays included (at n = 512, about 4000
    faults in a call, or none).  Fixed thresholds take that out of the comparison: after the first round
    neither pays page faults.  (A whole process, benchmarks/whole.py, pays them as it goes.)
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def idle_threads() -> None:
    """torch's idle OpenMP threads (its kernels' and MKL's) sleep, as attncli's idle OpenBLAS threads do.

    attncli's command makes OpenBLAS's threads sleep as soon as a product ends (``OPENBLAS_THREAD_TIMEOUT``,
    :data:`attncli.cli.main.LIBRARY_DEFAULTS`); torch's OpenMP threads by default spin a while after each parallel
    region.  In one process the spinning threads take the cores from the next round of either library, and on
    a busy machine torch's own rounds took 1.4 times the CPU time with them (see benchmarks/README.md,
    inprocess.py).  ``OMP_WAIT_POLICY=PASSIVE`` (read when torch starts; a value in the environment wins) puts
    the two on the same footing; ``--torch-spin`` leaves torch's default.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def idle_share(seconds: float = 0.5) -> float:
    """The share of the machine's CPU time that was idle over the next ``seconds`` (Linux /proc/stat; 1.0 elsewhere)."""
    def sample() -> list[int]:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:9]]

    try:
        before = sample()
        time.sleep(seconds)
        after = sample()
    except OSError:
        return 1.0
    spent = [b - a for a, b in zip(before, after)]
    return (spent[3] + spent[4]) / max(sum(spent), 1)  # idle and iowait


def compare(n: int, rounds: int, threads: int | None, folder: Path, idle: float = 0.0, patience: float = 600.0) -> None:
    import numpy as np
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from attncli.core.stream import attend_streamed
    from attncli.core.threads import cores
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from cases import write_inputs

    threads = threads or cores()
    torch.set_num_threads(threads)
    from exp_share import vectorised_exp

    import attncli.core.exponential as exponential

    vectorised_exp(exponential)  # mkl_umath's exp where attncli[fast-exp] is installed (ATTNCLI_EXP=numpy: numpy's)
    write_inputs(folder, [n])
    spec = build_spec(read_document(str(folder / f"doc{n}.yaml")))
    x = torch.from_numpy(np.load(folder / f"x{n}.npy"))
    w = {c: torch.from_numpy(np.load(folder / f"w{c}.npy")) for c in "qkvo"}

    def theirs():
        q, k, v = ((x @ w[c]).view(1, n, HEADS, D_K).transpose(1, 2) for c in "qkv")  # (1, h, n, d): the fused kernel
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # a fallback is an error
            h = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return h[0].transpose(0, 1).reshape(n, D_MODEL) @ w["o"]

    def ours():
        return attend_streamed(spec, threads=threads).output

    diff = float(np.abs(ours() - theirs().numpy()).max())  # (and both warmed up)
    ours(), theirs()
    load = os.getloadavg()
    times: dict[str, list[float]] = {"attncli": [], "torch": []}
    cpu: dict[str, list[float]] = {"attncli": [], "torch": []}
    deadline, skipped = time.monotonic() + patience, 0
    for r in range(rounds):
        while idle and idle_share() < idle and time.monotonic() < deadline:
            skipped += 1
        if idle and time.monotonic() >= deadline:
            rounds = r
            break
        for name in (("attncli", "torch") if r % 2 == 0 else ("torch", "attncli")):
            action = ours if name == "attncli" else theirs
            start, cpu_start = time.perf_counter(), time.process_time()
            action()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
    if rounds < 2:
        print(f"n = {n}: fewer than two rounds found the cores {idle:.0%} idle within {patience:.0f} s; "
              "nothing measured")
        return
    ratios = sorted(a / b for a, b in zip(times["attncli"], times["torch"]))
    cpu_ratios = sorted(a / b for a, b in zip(cpu["attncli"], cpu["torch"]))
    print(f"The computation alone, in one process: n = {n}, d_model {D_MODEL}, {HEADS} heads of {D_K}, float64, "
          f"W_Q, W_K, W_V, W_O, no mask, output only;")
    print(f"{threads} thread{'s' if threads > 1 else ''} each (attncli: its own threads, one BLAS thread in each; "
          f"torch.set_num_threads({threads}), OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}); "
          f"{rounds} rounds, the order alternating; "
          f"load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
          + f"; exp: {'numpy' if exponential.exp_for(0) is np.exp else 'mkl_umath'}"
          + (f"; each round after 0.5 s with the cores {idle:.0%} idle ({skipped} waits)" if idle else ""))
    for name, label in (("attncli", "attncli, attend_streamed"), ("torch", "torch, projections + fused SDPA")):
        found = sorted(times[name])
        print(f"  {label:<34}median {statistics.median(found) * 1e3:6.1f} ms  "
              f"(quartiles {_quartiles(found, 1e3, '.1f')} ms, best {found[0] * 1e3:.1f}); "
              f"CPU {statistics.median(cpu[name]) * 1e3:.1f} ms")
    print(f"  attncli ÷ torch, round by round:  median {statistics.median(ratios):.2f}  "
          f"(quartiles {_quartiles(ratios)}, range {ratios[0]:.2f}–{ratios[-1]:.2f});  "
          f"CPU time {statistics.median(cpu_ratios):.2f} "
          f"({_quartiles(cpu_ratios)});  max |Δ| {diff:.0e}")


def count_identity_products(n: int, folder: Path) -> None:
    """The projection products of a document without weights (n × 768, 12 heads): counted through its inputs."""
    import dataclasses

    import numpy as np

    from attncli.core.attention import projections
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    class Counted(np.ndarray):
        products = 0

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            Counted.products += ufunc is np.matmul
            plain = [a.view(np.ndarray) if isinstance(a, Counted) else a for a in inputs]
            return getattr(ufunc, method)(*plain, **kwargs)

    np.save(folder / "x_plain.npy", np.random.default_rng(0).normal(size=(n, D_MODEL)))
    (folder / "plain.yaml").write_text(f"inputs: x_plain.npy\nheads: {HEADS}\n")
    spec = build_spec(read_document(str(folder / "plain.yaml")))
    projections(dataclasses.replace(spec, inputs=spec.inputs.view(Counted)))
    seconds = []
    for _ in range(5):
        start = time.perf_counter()
        projections(spec)
        seconds.append(time.perf_counter() - start)
    print(f"A document without weights, n = {n}, d_model {D_MODEL}, {HEADS} heads: {Counted.products} "
          f"projection products (counted); Q, K and V take {statistics.median(seconds):.2f} s (median of 5)")


def _quartiles(values: list[float], scale: float = 1.0, spec: str = ".2f") -> str:
    q = statistics.quantiles(values, n=4)
    return f"{q[0] * scale:{spec}}–{q[2] * scale:{spec}}"


if __name__ == "__main__":
    main()
