"""Finding Transformer Engine's state modules in this process, and refusing versions the plugin
does not know.

The plugin works on the modules already imported: `import transformer_engine.pytorch` (a
wheel), or a harness that loaded TE's sources under their own names. Nothing is imported here
that the process has not imported.
"""

from __future__ import annotations

import importlib.metadata
import sys
import types
from dataclasses import dataclass
from typing import Optional

# The TE versions whose entry points the plugin wraps (docs/te-plugin.md), as "major.minor".
SUPPORTED_SERIES = ("2.20",)

_STATE_MODULES = {
    "quantization": "transformer_engine.pytorch.quantization",
    "distributed": "transformer_engine.pytorch.distributed",
    "base": "transformer_engine.pytorch.module.base",
    "linear": "transformer_engine.pytorch.module.linear",
}


class UnsupportedVersion(RuntimeError):
    """The loaded TE is a version the plugin does not know."""


@dataclass
class TeModules:
    """The TE modules whose entry points the plugin wraps."""

    quantization: types.ModuleType
    distributed: types.ModuleType
    base: types.ModuleType
    linear: types.ModuleType
    version: str

    @property
    def manager(self):
        return self.quantization.FP8GlobalStateManager


def _installed_version() -> Optional[str]:
    package = sys.modules.get("transformer_engine")
    version = getattr(package, "__version__", None)
    if isinstance(version, str):
        return version
    for distribution in ("transformer_engine", "transformer-engine"):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def find(te_version: Optional[str] = None) -> TeModules:
    """TE's state modules, once loaded; `te_version` names the version of a source tree that
    carries no package metadata (a checkout)."""
    missing = [name for name in _STATE_MODULES.values() if name not in sys.modules]
    if missing:
        raise RuntimeError(
            f"fp8sm.te: Transformer Engine is not loaded ({', '.join(missing)}): import transformer_engine.pytorch first"
        )
    version = te_version or _installed_version()
    known = ", ".join(f"{series}.x" for series in SUPPORTED_SERIES)
    if version is None:
        raise UnsupportedVersion(f"fp8sm.te: cannot tell which Transformer Engine this is; the plugin knows {known} "
                                 "(pass te_version= for a source tree without package metadata)")
    if ".".join(version.split(".")[:2]) not in SUPPORTED_SERIES:
        raise UnsupportedVersion(f"fp8sm.te: Transformer Engine {version} is not supported; the plugin knows {known}")
    loaded = {field: sys.modules[name] for field, name in _STATE_MODULES.items()}
    return TeModules(version=version, **loaded)
