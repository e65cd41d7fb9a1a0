"""The memory plan: how much a computation needs, whether it fits, and which computation runs.

    estimate   the bytes each computation takes, and writing or showing its result as each kind does
    decide     full, block by block, or only the stages before the scores; the refusals that say what fits

Between the maths (:mod:`attncli.core`) and the command line: core computes and knows nothing of
outputs or options, the plan weighs the result's kinds (json, .npz, table --full, explain …) and its
refusals name what to ask for instead (``--only output``, ``-o FILE.npz``). The Python API may call it::

    >>> import attncli
    >>> from attncli.plan import compute_within
    >>> trace = compute_within(attncli.load({"inputs": [[1, 0], [0, 1]]}), ["output"], "json")  # block by block
    >>> trace.weights is None, trace.output.shape
    (True, (2, 2))
"""

from attncli.plan.decide import Plan, compute_in_full, compute_within, plan

__all__ = ["Plan", "compute_in_full", "compute_within", "plan"]
