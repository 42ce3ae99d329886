"""fp8sm: the FP8 ownership / autocast / checkpoint state machine, for Python.

- ``Machine(semantics)``: one instance of the transition table; fire its events, read back what
  it decided (docs/python.md).
- ``run(scenario, semantics)``, ``explore(depth, semantics, ...)``, ``catalogue()``: the
  explorer's JSON documents (docs/json.md) as dicts.
- ``fp8sm.te``: the Transformer Engine plugin (docs/te-plugin.md).

Everything here is the compiled table's (fp8sm._core); this file only names it.
"""

from ._core import Machine, ModuleFlags, __version__, catalogue, explore, invariants, run

# The semantics a Machine, run and explore take.
SEMANTICS = ("upstream", "pr3213", "fp8sm")

__all__ = ["Machine", "ModuleFlags", "SEMANTICS", "__version__", "catalogue", "explore", "invariants", "run"]
