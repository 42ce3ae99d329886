"""Loads Transformer Engine's PyTorch state code from a source tree, without its C++ extension.

The tree is a directory holding the `transformer_engine` package: an unpacked wheel, or a
checkout of TE (a branch, a PR head). Only what te_stubs.STUBS lists is replaced; the rest of
quantization.py, distributed.py, module/base.py and module/linear.py runs as TE wrote it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import te_stubs


@dataclass
class TE:
    """The loaded modules the harness drives."""

    quantization: types.ModuleType
    distributed: types.ModuleType
    base: types.ModuleType
    linear: types.ModuleType
    recipe: types.ModuleType
    source: Path

    @property
    def manager(self):
        return self.quantization.FP8GlobalStateManager


def _empty_package(name: str, directory: Path) -> None:
    """A package whose __init__ is not run: its submodules load from their own files."""
    package = types.ModuleType(name)
    package.__path__ = [str(directory)]
    sys.modules[name] = package


def load(source: Path) -> TE:
    source = Path(source).resolve()
    if not (source / "transformer_engine" / "pytorch" / "quantization.py").is_file():
        raise SystemExit(f"{source}: no transformer_engine/pytorch/quantization.py (not a TE source tree)")
    if any(name == "transformer_engine" or name.startswith("transformer_engine.") for name in sys.modules):
        raise RuntimeError("TE is already loaded in this process")
    sys.path.insert(0, str(source))

    # TE's own switch for builds: transformer_engine.common then defines its helpers without
    # loading the core shared library.
    os.environ["NVTE_PROJECT_BUILDING"] = "1"
    os.environ.pop("NVTE_RELEASE_BUILD", None)
    sys.modules["transformer_engine_torch"] = te_stubs.make_tex_module()
    _empty_package("transformer_engine", source / "transformer_engine")
    import transformer_engine.common as common  # noqa: E402  (the real module)

    common.load_framework_extension = lambda framework: None  # the extension is the stub above
    _empty_package("transformer_engine.pytorch", source / "transformer_engine" / "pytorch")
    for name in te_stubs.OPAQUE_MODULES:
        sys.modules[name] = te_stubs.make_opaque_module(name)

    # module/__init__ first, as transformer_engine.pytorch's own __init__ does: the tensor
    # modules import each other in cycles that only resolve in that order.
    import transformer_engine.pytorch.constants  # noqa: F401
    import transformer_engine.pytorch.module  # noqa: F401
    import transformer_engine.common.recipe as recipe
    import transformer_engine.pytorch.distributed as distributed
    import transformer_engine.pytorch.module.base as base
    import transformer_engine.pytorch.module.linear as linear
    import transformer_engine.pytorch.quantization as quantization

    te = TE(quantization, distributed, base, linear, recipe, source)
    te_stubs.install_runtime_stubs(te)
    return te


@contextlib.contextmanager
def cuda_reported_available():
    """TransformerEngineBaseModule.__init__ refuses to run without CUDA (te_stubs.STUBS)."""
    import torch

    saved = torch.cuda.is_available
    torch.cuda.is_available = te_stubs.stub("torch.cuda.is_available", lambda: True)
    try:
        yield
    finally:
        torch.cuda.is_available = saved
