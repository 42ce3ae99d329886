"""What `pip install .` puts in place: the module, its type stubs, the marker that says it has them."""

from pathlib import Path

import pytest

import fp8sm
from fp8sm import _core


def test_the_stubs_ship_with_the_module_and_name_every_public_name():
    package = Path(fp8sm.__file__).parent
    assert (package / "py.typed").is_file()
    stubs = (package / "_core.pyi").read_text()
    for name in ["Machine", "ModuleFlags", "run", "explore", "catalogue", "invariants"]:
        assert name in dir(_core)
        assert f"def {name}(" in stubs or f"class {name}" in stubs, name


def test_the_version_is_the_projects():
    assert fp8sm.__version__ == "0.1.0"


def test_the_te_plugin_refuses_without_te_loaded():
    import fp8sm.te

    with pytest.raises(RuntimeError, match="Transformer Engine is not loaded"):
        fp8sm.te.install("fp8sm")
    assert fp8sm.te.active() is None
    with pytest.raises(ValueError, match="unknown semantics"):
        fp8sm.te.install("main")
