"""attncli: see every number of self-attention.

The library never imports the command-line layer: ``attncli.inputs.builder`` turns a
document into a validated :class:`~attncli.inputs.builder.Spec`, ``attncli.core.attention``
computes a :class:`~attncli.core.attention.Trace` of every intermediate, and the
renderers (tables, JSON, explanations) only read that trace.
"""

__version__ = "0.1.0"
