"""The TE entry points the plugin wraps or replaces (docs/te-plugin.md lists each, with why).

Each wrapper fires the table's event for what TE is doing and lets the table's answer stand:

- FP8GlobalStateManager.autocast_enter: TE's own (recipe, group, availability checks), then
  AC_ENTER; autocast_exit is replaced: AC_EXIT, and the forward update only if the table made it;
- activation_recompute_forward: a subclass whose enter and exit are the table's checkpoint
  events (ARF_ENTER/EXIT, fwd or rc) for the checkpoint instance it belongs to;
- _CheckpointFunction.forward / backward, get_activation_recompute_contexts and checkpoint:
  which checkpoint instance an ARF belongs to, and the table's dispatch (whether a checkpoint
  under no_grad, or a reentrant one on inputs that need no grad, enters its ARF);
- TransformerEngineBaseModule.prepare_forward / end_forward: the module's prepare and
  end_forward events; TE's branch (recompute or not) is the table's, and TE's register,
  stash, pop and restore functions act only when the table took that action (the gates);
- module.linear._check_fp8_reduce_and_update: the claim, the table's answer returned;
- _Linear.forward / backward: the node's owner flag, and the backward events; TE's own
  backward update is switched off and the table's made instead.

Every wrapper reads the plugin through `_state.plugin` (a global of this module, not a closure),
so that a harness that checks TE's globals between programs sees the same wrappers throughout.
"""

from __future__ import annotations

import functools
import sys
import weakref
from contextlib import nullcontext
from typing import Callable, List, Optional, Tuple

import torch

from fp8sm.te._plugin import ModuleForward, Plugin


class _State:
    plugin: Optional[Plugin] = None
    undo: List[Tuple[object, str, object]] = []


_state = _State()


def _replace(owner, name: str, value) -> None:
    _state.undo.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
    setattr(owner, name, value)


def uninstall_all() -> None:
    for owner, name, value in reversed(_state.undo):
        setattr(owner, name, value)
    _state.undo.clear()
    _state.plugin = None


def install_all(plugin: Plugin) -> None:
    te = plugin.te
    manager, distributed, base, linear = te.manager, te.distributed, te.base, te.linear
    _state.plugin = plugin
    _install_autocast(manager)
    _install_gates(manager)
    _install_checkpoints(distributed)
    _install_module_forward(base, linear.Linear)
    _install_linear(linear)
    _install_grad_modes()


# ---- autocast ------------------------------------------------------------------------------------

def _install_autocast(manager) -> None:
    te_enter = manager.__dict__["autocast_enter"].__func__

    def autocast_enter(cls, enabled=False, calibrating=False, fp8_recipe=None, fp8_group=None, _graph=False):
        plugin = _state.plugin
        if _graph:
            raise NotImplementedError("fp8sm.te: autocast(_graph=True) (CUDA graph capture) is not in the table")
        te_enter(cls, enabled, calibrating, fp8_recipe, fp8_group, _graph)  # recipe, group, checks
        opened_by_recompute, plugin.recompute_autocast_next = plugin.recompute_autocast_next, False
        plugin.fire("autocast_enter", enabled, opened_by_recompute)

    def autocast_exit(cls, enabled, _graph):
        _state.plugin.fire("autocast_exit")  # the forward update is an action, if the table takes it

    _replace(manager, "autocast_enter", classmethod(autocast_enter))
    _replace(manager, "autocast_exit", classmethod(autocast_exit))


# ---- the gates: TE's own meta functions act for the table's actions only -----------------------------

def _install_gates(manager) -> None:
    te_register = manager.__dict__["add_fp8_tensors_to_global_buffer"].__func__
    te_stash = manager.__dict__["copy_forward_fp8_meta_tensors_for_recompute"].__func__
    te_pop = manager.__dict__["get_old_fp8_meta_tensors_for_recompute"].__func__
    te_restore = manager.__dict__["restore_fp8_meta_tensors"].__func__

    def gate(name: str, te_function: Callable, static: bool = False):
        def gated(*args):
            plugin = _state.plugin
            if plugin.take_pending(name) is not None or not plugin.deciding:
                return te_function(*args)
            return None  # TE's call that the table did not decide: nothing happens
        return staticmethod(gated) if static else classmethod(gated)

    def pop(cls, fp8_meta):
        plugin = _state.plugin
        save = plugin.take_pending("save_for_restore")
        popped = plugin.take_pending("pop_stash")
        replay = plugin.take_pending("replay_stash")
        if not (save or popped or replay):
            return None if plugin.deciding else te_pop(cls, fp8_meta)
        if not plugin._delayed(fp8_meta):
            return None
        if save and popped:
            return te_pop(cls, fp8_meta)  # TE's function is exactly the two actions
        if save:
            plugin.save_for_restore(fp8_meta)
        if popped:
            plugin.pop_stash(fp8_meta)
        if replay:
            plugin.replay_stash(fp8_meta, *replay[1:])
        return None

    _replace(manager, "add_fp8_tensors_to_global_buffer", gate("registered", te_register))
    _replace(manager, "copy_forward_fp8_meta_tensors_for_recompute", gate("stash", te_stash))
    _replace(manager, "get_old_fp8_meta_tensors_for_recompute", classmethod(pop))
    _replace(manager, "restore_fp8_meta_tensors", gate("restore", te_restore, static=True))


# ---- checkpoints ---------------------------------------------------------------------------------

def _install_checkpoints(distributed) -> None:
    te_arf = distributed.activation_recompute_forward
    function = distributed._CheckpointFunction
    te_forward = function.__dict__["forward"].__func__
    te_backward = function.__dict__["backward"].__func__

    class RoutedActivationRecompute(te_arf):
        """TE's activation-recompute context, its enter and exit the table's checkpoint events."""

        def __init__(self, activation_recompute: bool = False, recompute_phase: bool = False):
            super().__init__(activation_recompute, recompute_phase)
            plugin = _state.plugin
            self.capture: Optional[int] = None
            self.reentrant = False
            if not activation_recompute:
                return
            # Whose context this is: a non-reentrant checkpoint's pair (paired below), the
            # reentrant checkpoint's own, made by TE's _CheckpointFunction.forward or .backward
            # (not a context of code they run: a recompute that the unpack of their saved
            # tensors triggers, a user's), or one of a checkpoint instance of its own.
            if not recompute_phase:
                self.capture = plugin.new_capture()
                if plugin.making_pair or not plugin.reentrant_forwards or plugin.reentrant_forwards[-1] is None:
                    return
                ctx = plugin.reentrant_forwards[-1]
                plugin.reentrant_forwards[-1] = None  # this forward's context is made
                self.reentrant = True
                ctx._fp8sm_capture = self.capture
                weakref.finalize(ctx, plugin.release_later, self.capture)
            elif not plugin.making_pair and plugin.reentrant_recomputes:
                capture, recomputes_open = plugin.reentrant_recomputes[-1]
                if capture is not None and recomputes_open == plugin.recomputes_open:
                    plugin.reentrant_recomputes[-1] = (None, recomputes_open)
                    self.capture = capture

        def __enter__(self):
            plugin = _state.plugin
            if not self.activation_recompute:
                return super().__enter__()
            if not self.recompute_phase:
                plugin.fire("checkpoint_forward_enter", self.capture, self.reentrant)
                return None
            if self.capture is None:
                self.capture = plugin.new_capture()  # a recompute of nothing captured
            if torch._C._current_graph_task_id() != -1:
                plugin.backward_node_runs()
            plugin.fire("recompute_enter", self.capture)
            plugin.recomputes_open += 1
            plugin.recompute_autocast_next = True
            return None

        def __exit__(self, exc_type, exc_value, traceback):
            plugin = _state.plugin
            if not self.activation_recompute:
                return super().__exit__(exc_type, exc_value, traceback)
            plugin.recompute_autocast_next = False
            if self.recompute_phase:
                plugin.recomputes_open -= 1
                plugin.fire("recompute_exit")
            else:
                plugin.fire("checkpoint_forward_exit", exc_type is not None)
            return None

    _replace(distributed, "activation_recompute_forward", RoutedActivationRecompute)

    te_contexts = distributed.get_activation_recompute_contexts

    def get_activation_recompute_contexts():
        plugin = _state.plugin
        plugin.making_pair = True
        try:
            forward_ctx, recompute_ctx = te_contexts()
        finally:
            plugin.making_pair = False
        recompute_ctx.capture = forward_ctx.capture  # the non-reentrant checkpoint's pair
        weakref.finalize(recompute_ctx, _state.plugin.release_later, forward_ctx.capture)
        return forward_ctx, recompute_ctx

    _replace(distributed, "get_activation_recompute_contexts", get_activation_recompute_contexts)

    def checkpoint_forward(ctx, run_function, *rest):
        plugin = _state.plugin
        needs_grad = any(ctx.needs_input_grad)
        plugin.catch_up(sync_grad=False)  # the caller's grad mode: torch runs this forward with grad off
        if not needs_grad and not plugin.machine.reentrant_forward_skips_arf(False):
            # TE enters no ARF here (a nullcontext); the table does: the plugin's own around the body.
            run_function = _with_arf(distributed, run_function)
        plugin.reentrant_forwards.append(ctx)
        plugin.checkpoint_forward_depth += 1
        try:
            return te_forward(ctx, run_function, *rest)
        finally:
            plugin.checkpoint_forward_depth -= 1
            plugin.reentrant_forwards.pop()

    def checkpoint_backward(ctx, *grads):
        plugin = _state.plugin
        plugin.backward_node_runs()
        plugin.reentrant_recomputes.append((getattr(ctx, "_fp8sm_capture", None), plugin.recomputes_open))
        plugin.checkpoint_backward_depth += 1
        try:
            return te_backward(ctx, *grads)
        finally:
            plugin.checkpoint_backward_depth -= 1
            plugin.reentrant_recomputes.pop()

    _replace(function, "forward", staticmethod(checkpoint_forward))
    _replace(function, "backward", staticmethod(checkpoint_backward))

    te_checkpoint = distributed.checkpoint

    @functools.wraps(te_checkpoint)
    def checkpoint(function, *args, **kwargs):
        plugin = _state.plugin
        plugin.catch_up()  # the table's grad mode is torch's before it is asked
        if not torch.is_grad_enabled() and not plugin.machine.checkpoint_call_is_plain():
            # TE runs the function as a plain call under no_grad; the table enters the ARF.
            reentrant = kwargs.get("use_reentrant", True)
            function = _with_arf(distributed, function, reentrant=reentrant)
        return te_checkpoint(function, *args, **kwargs)

    _replace(distributed, "checkpoint", checkpoint)


def _with_arf(distributed, function: Callable, reentrant: bool = True) -> Callable:
    """`function` run inside an original-forward ARF of a checkpoint instance of its own, which
    no recompute will ever replay (the table releases it at once)."""

    def run(*args, **kwargs):
        plugin = _state.plugin
        arf = distributed.activation_recompute_forward(activation_recompute=True, recompute_phase=False)
        arf.reentrant = reentrant
        try:
            with arf:
                return function(*args, **kwargs)
        finally:
            plugin.release_later(arf.capture)

    return run


# ---- module forward ------------------------------------------------------------------------------

def _install_module_forward(base, routed_module_class) -> None:
    module_class = base.TransformerEngineBaseModule
    te_prepare = module_class.__dict__["prepare_forward"]
    te_end = module_class.__dict__["end_forward"]
    te_phase = base.in_fp8_activation_recompute_phase

    def in_recompute_phase() -> bool:
        plugin = _state.plugin
        return plugin.branch if plugin.deciding else te_phase()

    def prepare_forward(self, inp, *args, **kwargs):
        plugin = _state.plugin
        if not isinstance(self, routed_module_class):
            # Its claim and backward update are not routed (LayerNormLinear, LayerNormMLP,
            # GroupedLinear keep their own): half a routing would be neither TE nor the table.
            raise NotImplementedError(f"fp8sm.te: {type(self).__name__} is not routed through the table "
                                      "(the plugin routes transformer_engine.pytorch.Linear; docs/te-plugin.md)")
        m = plugin.module_id(self)
        actions = plugin.fire("module_prepare", m, defer=True)
        # TE's recompute branch (its meta replaced by a stashed one, no init) where the table
        # pops or replays a stash; its normal branch otherwise, whose register and stash the
        # gates let through only if the table took them.
        recompute_branch = any(a[0] in ("pop_stash", "replay_stash") for a in actions)
        _set_fp8(self, recompute_branch or self.fp8)
        plugin.deciding += 1
        plugin.branch = recompute_branch
        try:
            result = te_prepare(self, inp, *args, **kwargs)
            plugin.perform_pending()
        finally:
            plugin.deciding -= 1
            plugin.pending.clear()
        _set_fp8(self, plugin.machine.module(m).fp8)  # the table's: FP8 in this run or not
        plugin.forwards.append(ModuleForward(m))
        return result

    def end_forward(self):
        plugin = _state.plugin
        forward = plugin.forwards.pop()
        if not forward.claimed:
            claim(plugin, forward)  # TE asked nothing (no FP8, no grad): the table's claim still runs
        actions = plugin.fire("module_end_forward", forward.module, defer=True)
        plugin.deciding += 1
        plugin.branch = any(a[0] == "restore" for a in actions)
        try:
            te_end(self)
            plugin.perform_pending()
        finally:
            plugin.deciding -= 1
            plugin.pending.clear()

    _replace(base, "in_fp8_activation_recompute_phase", in_recompute_phase)
    _replace(module_class, "prepare_forward", prepare_forward)
    _replace(module_class, "end_forward", end_forward)


def _set_fp8(module, fp8: bool) -> None:
    if module.fp8 != fp8:
        module.fast_setattr("fp8", fp8) if hasattr(module, "fast_setattr") else setattr(module, "fp8", fp8)


def claim(plugin: Plugin, forward: ModuleForward) -> bool:
    owner, _ = plugin.fire("module_claim", forward.module, sync_grad=False)
    forward.claimed = True
    forward.owner = owner is True
    forward.fp8 = plugin.machine.module(forward.module).fp8
    return forward.owner


# ---- Linear: the claim and the backward --------------------------------------------------------------

def _install_linear(linear) -> None:
    def check_fp8_reduce_and_update() -> bool:
        plugin = _state.plugin
        return claim(plugin, plugin.forwards[-1])

    function = linear._Linear
    te_forward = function.__dict__["forward"].__func__
    te_backward = function.__dict__["backward"].__func__

    def forward(ctx, *args, **kwargs):
        plugin = _state.plugin
        if ctx is not None and plugin.forwards:  # None: TE's forward without autograd (grad off)
            ctx._fp8sm_forward = plugin.forwards[-1]
        return te_forward(ctx, *args, **kwargs)

    def backward(ctx, *grads):
        plugin = _state.plugin
        forward_record = getattr(ctx, "_fp8sm_forward", None)
        if forward_record is None:  # recorded before the plugin was installed
            return te_backward(ctx, *grads)
        plugin.backward_node_runs()
        ran_before = ctx.backward_objects is None
        plugin.fire("module_backward_begin", forward_record.module, ran_before)
        if ran_before:
            # The table lets the node run again (fp8sm keeps what a backward needs, for the
            # second backward of a retained graph); TE dropped it after the first: it is put back.
            ctx.backward_objects, ctx.tensor_objects = forward_record.backward_objects
        else:
            forward_record.backward_objects = (ctx.backward_objects, ctx.tensor_objects)
            ctx.backward_objects.reduce_and_update_bwd_fp8_tensors = False  # the table's update instead
        result = te_backward(ctx, *grads)
        plugin.fire("module_backward", forward_record.module, forward_record.owner, forward_record.fp8)
        return result

    _replace(linear, "_check_fp8_reduce_and_update", check_fp8_reduce_and_update)
    _replace(function, "forward", staticmethod(forward))
    _replace(function, "backward", staticmethod(backward))


# ---- the program's grad mode ------------------------------------------------------------------------

# Code whose grad-mode blocks are not the program's: torch's, TE's, the plugin's.
_NOT_THE_PROGRAM = ("torch", "transformer_engine", "fp8sm")


def _install_grad_modes() -> None:
    """torch.no_grad and torch.enable_grad blocks the program opens become the table's grad
    events (torch's own, TE's and the autograd engine's are seen as torch's grad mode changes)."""
    for block_class, enabled in ((torch.autograd.grad_mode.no_grad, False),
                                 (torch.autograd.grad_mode.enable_grad, True)):
        torch_enter, torch_exit = block_class.__dict__["__enter__"], block_class.__dict__["__exit__"]

        def enter(self, _torch_enter=torch_enter, _enabled=enabled):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if _state.plugin is not None and not caller.startswith(_NOT_THE_PROGRAM):
                _state.plugin.program_grad_begins(_enabled, self)
            return _torch_enter(self)

        def exit(self, exc_type, exc_value, traceback, _torch_exit=torch_exit):
            if _state.plugin is not None:
                _state.plugin.program_grad_ends(self)
            return _torch_exit(self, exc_type, exc_value, traceback)

        _replace(block_class, "__enter__", enter)
        _replace(block_class, "__exit__", exit)
