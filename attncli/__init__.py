"""attncli: see every number of self-attention.

The library never imports the command-line layer: ``attncli.spec`` turns a
document into a validated :class:`~attncli.spec.Spec`, ``attncli.attention``
computes a :class:`~attncli.attention.Trace` of every intermediate, and the
renderers (tables, JSON, explanations) only read that trace.
"""

__version__ = "0.1.0"
