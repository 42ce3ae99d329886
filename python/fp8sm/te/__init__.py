"""fp8sm.te: Transformer Engine's FP8 state decisions made by the fp8sm table.

    import transformer_engine.pytorch as te
    import fp8sm.te

    fp8sm.te.install("fp8sm")          # or: with fp8sm.te.installed("fp8sm"): ...
    ...                                 # TE as usual: te.autocast, te.Linear, te.distributed.checkpoint
    fp8sm.te.uninstall()

Under "upstream" TE behaves as without the plugin (the conformance harness checks that on TE's
own code); under "pr3213" as the model of PR #3213; under "fp8sm" as the semantics the explorer
proves. The entry points it wraps are listed in docs/te-plugin.md. One plugin per process, as
TE's FP8 state is one per process.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Optional

import fp8sm
from fp8sm.te._modules import SUPPORTED_SERIES, UnsupportedVersion, find

if TYPE_CHECKING:
    from fp8sm.te._plugin import Plugin

# The plugin's own modules import torch: they are imported by install(), once TE (and so torch)
# is known to be loaded, so that `import fp8sm.te` works where neither is installed.

__all__ = ["SUPPORTED_SERIES", "UnsupportedVersion", "active", "install", "installed", "reset", "uninstall"]


def install(semantics: str = "fp8sm", *, te_version: Optional[str] = None) -> "Plugin":
    """Routes TE's FP8 state decisions through a machine under `semantics`; returns the plugin
    (its `machine` is the table's instance). TE must be imported first. Refuses a TE version
    it does not know, a second install, and an unknown semantics."""
    if semantics not in fp8sm.SEMANTICS:
        raise ValueError(f"unknown semantics '{semantics}' (expected fp8sm, upstream or pr3213)")
    if active() is not None:
        raise RuntimeError("fp8sm.te: already installed (uninstall() first)")
    te = find(te_version)
    from fp8sm.te import _entry_points
    from fp8sm.te._plugin import Plugin

    if te.manager.quantization_state.autocast_depth != 0:
        raise RuntimeError("fp8sm.te: install outside any autocast (TE's depth is not 0)")
    plugin = Plugin(semantics, te)
    try:
        _entry_points.install_all(plugin)
    except BaseException:
        _entry_points.uninstall_all()  # all or nothing
        raise
    return plugin


def uninstall() -> None:
    """Puts TE's own entry points back."""
    entry_points = sys.modules.get("fp8sm.te._entry_points")
    if entry_points is not None:
        entry_points.uninstall_all()


def active() -> Optional["Plugin"]:
    """The installed plugin, or None."""
    entry_points = sys.modules.get("fp8sm.te._entry_points")
    return entry_points._state.plugin if entry_points is not None else None


def reset() -> None:
    """A fresh machine for the installed plugin: TE's state as at import, for a process that
    runs many programs (the harness resets TE's own globals the same way)."""
    plugin = active()
    if plugin is None:
        raise RuntimeError("fp8sm.te: not installed")
    plugin.reset()


@contextmanager
def installed(semantics: str = "fp8sm", *, te_version: Optional[str] = None) -> Iterator["Plugin"]:
    """install() for the block, uninstall() after it."""
    plugin = install(semantics, te_version=te_version)
    try:
        yield plugin
    finally:
        uninstall()
