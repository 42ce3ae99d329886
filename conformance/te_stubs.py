"""Everything the conformance harness puts in place of TE's C++/CUDA side, in one place.

TE's Python state code (quantization.py, distributed.py, module/base.py, module/linear.py) runs
as it is. What cannot run without a GPU is replaced here, and only here; every entry of
STUBS says what it replaces and why that cannot change an FP8 state decision. Anything of the
C++ extension that is not listed is an *opaque* attribute: it may be looked up (TE's modules
read many names at import time, for annotations and tables), but calling it raises
StubCalled, so a code path that really needs the extension fails loudly instead of running on
a silent stand-in.
"""

from __future__ import annotations

import ast
import enum
import functools
import inspect
import sys
import textwrap
import types

import torch
from torch.overrides import TorchFunctionMode

# The harness's Linear(WIDTH, WIDTH) runs on activations of (ROWS, WIDTH) (te_harness).
ROWS, WIDTH = 2, 4

# name -> why replacing it is safe. Printed by `te_conformance.py --list-stubs` and by
# docs/conformance.md.
STUBS = {
    "transformer_engine_torch (the C++ extension)":
        "an import stub: opaque attributes, calling one raises StubCalled (see below)",
    "transformer_engine_torch.DType":
        "an IntEnum with the extension's member names: TE's constants.DType copies it at import",
    "transformer_engine_torch.FP8FwdTensors / FP8BwdTensors":
        "IntEnums with the extension's values: quantizer indices within a module's meta",
    "transformer_engine_torch.fused_amax_and_scale_update_after_reduction":
        "a no-op: the amax/scale arithmetic of an update; whether and when an update is called "
        "is decided in quantization.py, which runs as it is, and the harness counts those calls",
    "transformer_engine (package __init__), transformer_engine.pytorch (package __init__)":
        "not executed: they load the shared libraries and re-export everything (attention "
        "included); the submodules the harness needs are imported from their own files",
    "transformer_engine.common (package __init__)":
        "executed with NVTE_PROJECT_BUILDING=1, TE's own switch for its build, so it defines its "
        "helpers without loading the core library; load_framework_extension does nothing (the "
        "extension is the import stub)",
    "quantization.get_device_compute_capability":
        "(9, 0), a Hopper GPU: FP8 is available (autocast asserts it), MXFP8 is not (so the "
        "default recipe is DelayedScaling, as on an H100 or H200)",
    "distributed._get_cuda_rng_state / _set_cuda_rng_state":
        "return a CPU generator state / do nothing: RNG state never feeds an FP8 state decision",
    "distributed.get_te_classes":
        "the TE module classes without the attention ones (which need the fused-attention "
        "extension at import): checkpoint() asks only whether its function is or holds a TE "
        "module, and for a plain callable, as the harness passes, it assumes so without looking",
    "torch.cuda.is_current_stream_capturing":
        "False: no CUDA graph is being captured (it asks the CUDA driver, which is absent)",
    "torch.cuda.is_available (while a module is constructed)":
        "True: TransformerEngineBaseModule.__init__ refuses to build without CUDA",
    "device='cuda' and Tensor.is_cuda (a torch function mode, CudaOnCpu)":
        "tensors TE allocates on 'cuda' (scales, amax histories) are made on the CPU, and "
        "is_cuda reads True (prepare_forward refuses inputs that are not on a GPU)",
    "linear._Linear.backward, distributed._CheckpointFunction.backward (wrapped)":
        "each runs inside CudaOnCpu, since torch clears function modes for the backward pass; "
        "the functions themselves are TE's, called with the same arguments",
    "linear._linear_forward_impl / _linear_setup_ctx / _linear_backward_impl (or _linear_backward)":
        "an fp32 matmul that saves its input (2, 4) and its weight (4, 4) in TE's slots for them, "
        "through TE's prepare_for_saving and ctx.save_for_backward (two saved tensors per node: "
        "docs/scenarios.md), and its gradients from the tensors TE's restore_from_func_ctx gives "
        "back, refusing a missing one or one of the wrong shape as the real GEMM would: the GEMMs "
        "and casts of te.Linear; _Linear.forward/backward themselves (the claim, "
        "ctx.backward_objects, the unpack of saved tensors, the backward update) run as they are",
    "every stub above (wrapped)":
        "an exception escaping a stub's own code stops the run as StubFailed, a failure of the "
        "harness, so a bug in a stub never passes for an exception of TE's; what the stubbed "
        "GEMM refuses of TE's operands, and what the TE and torch code a stub calls raises, stay "
        "the program's",
}


class StubCalled(BaseException):
    """A function of TE's C++ extension that the harness does not stand in for was called (a
    BaseException: no `except Exception` of TE or of a program may take it for a result)."""


class StubFailed(BaseException):
    """A stub's own code raised: a bug of the harness, never an exception of TE's (a
    BaseException for the same reason as StubCalled)."""


def stub(name: str, function):
    """`function` as the stub `name`: an exception escaping its own code becomes a StubFailed,
    except one it raised on purpose as TE's (_refused)."""

    @functools.wraps(function)
    def stubbed(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as e:
            if getattr(e, "refused_operands_of_te", False):
                raise
            raise StubFailed(f"the stub {name} raised {type(e).__name__}: {e}") from e

    return stubbed


def _refused(error: Exception) -> Exception:
    """Marks what a stubbed kernel raises when TE hands it operands the real kernel would
    refuse: the program's exception (TE's doing), not the stub's failure."""
    error.refused_operands_of_te = True
    return error


_opaque_numbers: dict = {}


class _Opaque:
    """Any attribute of the extension that the harness does not implement."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Opaque(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise StubCalled(f"{self._name} (part of TE's C++ extension, not stubbed by the harness)")

    def __repr__(self) -> str:
        return f"<opaque {self._name}>"

    # TE copies the extension's enum members into Python enums at import (attention backends,
    # layouts, ...): each opaque name reads as its own number, stable within the process.
    def __int__(self) -> int:
        return _opaque_numbers.setdefault(self._name, 1000 + len(_opaque_numbers))

    __index__ = __int__

    # Used in type annotations evaluated at import time (`X | None`).
    def __or__(self, other):
        return self

    def __ror__(self, other):
        return self

    def __mro_entries__(self, bases):  # subclassed at import time by a few TE classes
        return (object,)


class TexDType(enum.IntEnum):
    kByte = 0
    kInt32 = 1
    kFloat32 = 3
    kFloat16 = 4
    kBFloat16 = 5
    kFloat8E4M3 = 6
    kFloat8E5M2 = 7
    kFloat4E2M1 = 8


# Indices of the quantizers of one GEMM in a module's forward / backward meta, as the extension
# numbers them (common/include/transformer_engine/transformer_engine.h).
class TexFP8FwdTensors(enum.IntEnum):
    GEMM1_INPUT = 0
    GEMM1_WEIGHT = 1
    GEMM1_OUTPUT = 2
    GEMM2_INPUT = 3
    GEMM2_WEIGHT = 4
    GEMM2_OUTPUT = 5
    GEMM3_INPUT = 6
    GEMM3_WEIGHT = 7
    GEMM3_OUTPUT = 8


class TexFP8BwdTensors(enum.IntEnum):
    GRAD_OUTPUT1 = 0
    GRAD_INPUT1 = 1
    GRAD_OUTPUT2 = 2
    GRAD_INPUT2 = 3
    GRAD_OUTPUT3 = 4
    GRAD_INPUT3 = 5


class _TexModule(types.ModuleType):
    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Opaque(f"transformer_engine_torch.{attr}")


def make_tex_module() -> types.ModuleType:
    tex = _TexModule("transformer_engine_torch")
    tex.DType = TexDType
    tex.FP8FwdTensors = TexFP8FwdTensors
    tex.FP8BwdTensors = TexFP8BwdTensors
    tex.fused_amax_and_scale_update_after_reduction = stub(
        "fused_amax_and_scale_update_after_reduction", _fused_amax_and_scale_update)
    return tex


# Called with (amax histories, scales) of one update, when set: an observer (te_observe.py)
# that gives the numbers a meaning of its own folds them there. None outside an observed run.
FOLD_OBSERVER = None


def _fused_amax_and_scale_update(contiguous_amax, amax_histories, scales, *args, **kwargs):
    if FOLD_OBSERVER is not None:
        FOLD_OBSERVER(amax_histories, scales)


# TE's Python wrappers of the extension's kernels (GEMM, casts, fused attention): not imported
# (their import-time tables mirror the extension's enums); every name in them is opaque.
OPAQUE_MODULES = {
    "transformer_engine.pytorch.cpp_extensions":
        "the Python wrappers of the extension's GEMM, cast and attention kernels",
    "transformer_engine.pytorch.cpp_extensions.gemm": "the GEMM wrapper (module/base.py reads a constant)",
}


def make_opaque_module(name: str) -> types.ModuleType:
    module = _TexModule(name)
    module.__path__ = []
    module._NUM_MAX_UB_STREAMS = 3  # base.py sizes a tuple of userbuffer streams with it
    return module


def install_runtime_stubs(te) -> None:
    """The entries of STUBS that replace functions inside TE's loaded modules, each wrapped by
    stub(): an exception of its own is the harness's failure, never TE's."""
    te.quantization.get_device_compute_capability = stub("get_device_compute_capability", lambda: (9, 0))
    torch.cuda.is_current_stream_capturing = stub("torch.cuda.is_current_stream_capturing", lambda: False)
    te.distributed._get_cuda_rng_state = stub(
        "_get_cuda_rng_state", lambda device="cuda", clone=False, graph_safe=True: torch.get_rng_state())
    te.distributed._set_cuda_rng_state = stub("_set_cuda_rng_state", lambda new_state, device=-1, graph_safe=True: None)
    module = sys.modules["transformer_engine.pytorch.module"]
    te.distributed.get_te_classes = stub(
        "get_te_classes", lambda: (module.LayerNorm, module.RMSNorm, te.base.TransformerEngineBaseModule))
    # The three helpers _Linear calls, by the names and shapes the loaded version uses (TE 2.20
    # returns 4 values from the forward helper and names the backward one _linear_backward_impl,
    # the PR #3213 head 5 values and _linear_backward). They are looked up in this module at
    # each call, so a test can replace one.
    forward_values = _unpacked_from(te.linear._Linear.forward, "_linear_forward_impl")
    te.linear._linear_forward_impl = stub(
        "_linear_forward_impl", lambda fwd_args: _linear_forward_impl(fwd_args, forward_values))
    te.linear._linear_setup_ctx = stub("_linear_setup_ctx", lambda *args: _linear_setup_ctx(*args))
    backward_name = _called_from(te.linear._Linear.backward, "_linear_backward")
    setattr(te.linear, backward_name, stub(backward_name, lambda bwd_args: _linear_backward_impl(bwd_args)))
    for function in (te.linear._Linear, te.distributed._CheckpointFunction):
        function.backward = staticmethod(_inside_cuda_on_cpu(function.backward))


class CudaOnCpu(TorchFunctionMode):
    """Runs TE's CUDA-placed tensors on the CPU (STUBS: device='cuda' and Tensor.is_cuda)."""

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        placed = _on_cpu(func, kwargs or {})
        if placed is _IS_CUDA:
            return True
        return func(*args, **placed)  # torch's own operation, called by TE: its exceptions are TE's


_IS_CUDA = object()


def _place_on_cpu(func, kwargs: dict):
    """The stub's part of CudaOnCpu: is_cuda reads True, device='cuda' becomes the CPU."""
    if getattr(func, "__self__", None) is torch._C.TensorBase.is_cuda:
        return _IS_CUDA
    device = kwargs.get("device")
    if device is not None and torch.device(device).type == "cuda":
        return dict(kwargs, device="cpu")
    return kwargs


_on_cpu = stub("CudaOnCpu", _place_on_cpu)


def _inside_cuda_on_cpu(backward):
    """TE's backward, called unchanged inside CudaOnCpu: its exceptions are TE's."""

    @functools.wraps(backward)
    def wrapped(*args, **kwargs):
        with CudaOnCpu():
            return backward(*args, **kwargs)

    return wrapped


# ---- te.Linear's GEMMs ------------------------------------------------------------------------
# _Linear.forward calls _linear_forward_impl, then _linear_setup_ctx for what to save, then saves
# it with ctx.save_for_backward (through prepare_for_saving, TE's own); _Linear.backward restores
# it through the saved-tensor hooks and restore_from_func_ctx, TE's LinearBwdArgs.
# setup_saved_tensors puts it in its fields, and it calls _linear_backward_impl. Two tensors are
# saved per node, as TE's helper saves them: the input (2, 4) and the weight (4, 4), in TE's
# slots for them; the backward takes them from the fields TE restored them into, and refuses,
# as the real GEMM would, a missing one or one of the wrong shape (so a restore that pairs
# them wrongly shows as the program's exception).

def _function_ast(function) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]


def _unpacked_from(function, callee: str) -> int:
    """How many values `function` unpacks from its call of `callee`."""
    for node in ast.walk(_function_ast(function)):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == callee
                and isinstance(node.targets[0], ast.Tuple)):
            return len(node.targets[0].elts)
    raise StubCalled(f"{function.__qualname__} no longer unpacks a call of {callee}: update te_stubs")


def _called_from(function, prefix: str) -> str:
    """The one function named `prefix`... that `function` calls."""
    names = {node.func.id for node in ast.walk(_function_ast(function))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith(prefix)}
    if len(names) != 1:
        raise StubCalled(f"{function.__qualname__} calls {sorted(names)} for {prefix}*: update te_stubs")
    return names.pop()


# Called with (weight's data_ptr, fp8, forward) at each stubbed GEMM, when set: where an
# observer (te_observe.py) sees a module's casts and, in the backward, a module backward that
# got past its unpack. None outside an observed run.
GEMM_OBSERVER = None


def _operand(what: str, tensor, shape) -> torch.Tensor:
    """`tensor`, if the real GEMM would take it as `what`: else what that kernel raises, as
    TE's (a TypeError for no tensor, as pybind11 refuses it; a RuntimeError for a wrong
    shape, as the kernel's own check)."""
    if not isinstance(tensor, torch.Tensor):
        raise _refused(TypeError(f"the GEMM got {type(tensor).__name__} for {what}, not a tensor"))
    if tuple(tensor.shape) != tuple(shape):
        raise _refused(RuntimeError(f"the GEMM got {what} of shape {tuple(tensor.shape)}, not {tuple(shape)}"))
    return tensor


def _linear_forward_impl(fwd_args, values: int):
    """(out, weight workspace, tensors to save, [..,] ctx attributes): what _Linear.forward
    unpacks; the values it does not use here are None."""
    if GEMM_OBSERVER is not None:
        GEMM_OBSERVER(fwd_args.weight.data_ptr(), bool(fwd_args.fp8), True)
    weight = _operand("the weight", fwd_args.weight, (WIDTH, WIDTH))
    out = _operand("the input", fwd_args.inp, (ROWS, WIDTH)) @ weight.t()
    result = [None] * values
    result[0], result[2], result[-1] = out, (), {}
    return tuple(result)


def _linear_setup_ctx(bwd_args, fwd_args, fwd_outputs, ctx_attrs, tensors_to_save_from_forward):
    bwd_args.fp8 = fwd_args.fp8
    bwd_args.requires_dgrad = fwd_args.input_requires_grad
    bwd_args.requires_wgrad = fwd_args.weight_requires_grad
    # TE's slots (input, weight workspace, weight, bias), as its helper fills them without FP8
    # weights: the input and the weight, two shapes.
    return (fwd_args.inp, None, fwd_args.weight, None)


def _linear_backward_impl(bwd_args):
    grad_output = bwd_args.grad_output
    inputmat = _operand("the input", bwd_args.inputmat, (ROWS, WIDTH)) if bwd_args.requires_wgrad else None
    weight = _operand("the weight", bwd_args.saved_weight, (WIDTH, WIDTH)) if bwd_args.requires_dgrad else None
    if GEMM_OBSERVER is not None and isinstance(bwd_args.saved_weight, torch.Tensor):
        # The saved weight shares the module's storage (a recompute saves it detached).
        GEMM_OBSERVER(bwd_args.saved_weight.data_ptr(), bool(bwd_args.fp8), False)
    wgrad = grad_output.t() @ inputmat if inputmat is not None else None
    dgrad = grad_output @ weight if weight is not None else None
    return (wgrad, dgrad, None)
