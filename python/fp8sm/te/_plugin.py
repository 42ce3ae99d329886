"""The plugin's state: one fp8sm.Machine for the process (TE's FP8 state is process-global
too), and what it needs to translate between TE's calls and the table's events.

Every decision is the machine's: an entry point (_entry_points.py) fires an event, this class
performs the actions the table took on TE's tensors and mirrors the table's state into TE's
globals (the ownership bit, the autocast depth, the checkpoint region and phase flags), so
that TE code reading them reads the table's answer. Nothing here chooses an outcome; it
translates:

- torch's grad mode into the table's grad events (lazily, before each event: a push when it
  changed, the pop of that push when it changed back), internal when inside the autograd
  engine or a checkpoint's own forward;
- module objects into module ids, checkpoint instances into capture ids;
- the table's actions (statemachine/hooks.hpp) into TE's functions or, for fp8sm's stash kept
  per checkpoint instance, copies of the module's forward scaling tensors.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch

import fp8sm
from fp8sm.te._modules import TeModules

# The table's raises (spec/step_result.hpp's kinds that the table itself raises).
_TABLE_RAISES = (KeyError, IndexError, RuntimeError, AttributeError, TypeError)
# Actions that TE's own functions perform when the table decides them (the gates of
# _entry_points.py let TE's call through only for an action pending here).
_GATED = ("registered", "stash", "save_for_restore", "pop_stash", "replay_stash", "restore")
_STASH_KEY = "global_fp8_buffer_pos_fwd_recompute"
_FIFO_ACTIONS = ("ownership_captured", "ownership_installed")


@dataclass
class ModuleForward:
    """One module forward between its prepare_forward and its end_forward."""

    module: int
    claimed: bool = False
    owner: bool = False
    fp8: bool = False
    backward_objects: object = None  # what TE's Linear node keeps for its backward (see _entry_points)


class Plugin:
    def __init__(self, semantics: str, te: TeModules):
        self.semantics = semantics
        self.te = te
        self.reset()

    # ---- state ---------------------------------------------------------------------------------

    def reset(self) -> None:
        """A fresh machine, as at import: for a process that runs many programs (the harness)."""
        self.machine = fp8sm.Machine(self.semantics)
        self.module_ids: "weakref.WeakKeyDictionary[torch.nn.Module, int]" = weakref.WeakKeyDictionary()
        self.modules: Dict[int, "weakref.ref"] = {}
        self.next_capture = 0
        # Each grad push the plugin fired: the grad mode before it, and the program's block that
        # made it (None: a change of torch's grad mode seen before an event).
        self.grad_pushes: List[tuple] = []
        self.pending: List[tuple] = []        # actions decided, for TE's own functions to perform
        self.deciding = 0                     # inside a wrapped prepare_forward / end_forward
        self.branch: Optional[bool] = None    # there: whether TE takes its recompute branch
        self.forwards: List[ModuleForward] = []
        self.reentrant_forwards: List[object] = []   # the _CheckpointFunction contexts of the forwards running
        # The reentrant backwards running: the capture each will recompute (None once its
        # context is made), and how many recomputes were open when it began (a context made
        # inside a recompute that began since is not its own).
        self.reentrant_recomputes: List[tuple] = []
        self.recomputes_open = 0
        self.making_pair = False              # inside get_activation_recompute_contexts
        self.checkpoint_forward_depth = 0     # _CheckpointFunction.forward calls running (grad off is theirs)
        self.checkpoint_backward_depth = 0
        self.recompute_autocast_next = False  # the next autocast is the one a recompute opens
        self.released: List[int] = []         # captures whose checkpoint was freed, not yet told
        self.pass_task: Optional[int] = None  # the autograd graph task of the backward pass open
        self.pass_grad_depth = 0              # grad pushes before it
        self.stashes: Dict[int, Dict[int, List[tuple]]] = {}  # fp8sm: capture -> module -> metas
        self.last_replay: Optional[int] = None

    def module_id(self, module: torch.nn.Module) -> int:
        found = self.module_ids.get(module)
        if found is None:
            found = len(self.modules)
            self.module_ids[module] = found
            self.modules[found] = weakref.ref(module)
        return found

    def new_capture(self) -> int:
        capture = self.next_capture
        self.next_capture += 1
        return capture

    def release_later(self, capture: int) -> None:
        """A finalizer's: the checkpoint can never recompute; told before the next event."""
        self.released.append(capture)

    # ---- events --------------------------------------------------------------------------------

    def fire(self, event: str, *args, defer: bool = False, sync_grad: bool = True):
        """Fires `event` and performs its actions (or, with `defer`, leaves them pending for TE's
        own functions); raises what the table raised, after its actions. `sync_grad=False`: the
        grad mode torch has now is not the program's (inside an autograd Function's forward,
        which torch runs with grad off: the claim sees the grad mode of the module's caller)."""
        self.catch_up(sync_grad)
        try:
            result = getattr(self.machine, event)(*args)
        except _TABLE_RAISES as raised:
            actions = getattr(raised, "actions", None)
            if actions is None:
                raise
            self._perform(actions)  # the actions before the raise happen (TE's order)
            self._mirror(actions)
            raise
        actions = result[1] if event == "module_claim" else result
        if defer:
            # After TE's own part of the call (prepare_forward makes the module's meta before
            # anything can stash it): the caller runs it, then perform_pending().
            self.pending.extend(actions)
        else:
            self._perform(actions)
        self._mirror(actions)
        return result

    def catch_up(self, sync_grad: bool = True) -> None:
        """What happened since the last event without a call of TE's: freed checkpoints, a
        backward pass an exception ended, a change of torch's grad mode."""
        while self.released:
            self._perform(self.machine.checkpoint_released(self.released.pop(0)))
        if self.pass_task is not None and not self._in_engine():
            self._end_pass(completed=False)  # an exception left it: no callback came
        want = torch.is_grad_enabled()
        if sync_grad and self.machine.grad_enabled != want:
            top = self.grad_pushes[-1] if self.grad_pushes else None
            if top is not None and top[1] is None and top[0] == want:
                self.grad_pushes.pop()
                self.machine.grad_pop()
            else:
                self.grad_pushes.append((self.machine.grad_enabled, None))
                internal = self._in_engine() or self.checkpoint_forward_depth > 0
                self.machine.grad_push(want, internal)

    # The program's own no_grad / enable_grad blocks (_entry_points wraps torch's): pushed as
    # the program's even where torch's grad mode does not change (a no_grad inside a reentrant
    # checkpoint's forward, which torch already runs with grad off), so that the table knows
    # the program's grad mode as well as torch's.

    def program_grad_begins(self, enabled: bool, block: object) -> None:
        self.catch_up()
        self.grad_pushes.append((self.machine.grad_enabled, block))
        self.machine.grad_push(enabled, False)

    def program_grad_ends(self, block: object) -> None:
        if not any(entry[1] is block for entry in self.grad_pushes):
            return  # begun before the plugin was installed or reset
        while True:  # the pushes made inside the block first
            _, pushed_by = self.grad_pushes.pop()
            self.machine.grad_pop()
            if pushed_by is block:
                break

    @staticmethod
    def _in_engine() -> bool:
        return torch._C._current_graph_task_id() != -1

    def backward_node_runs(self) -> None:
        """A node of TE's runs its backward: the first of a pass begins the pass, and the pass
        ends (completed) when the graph task it belongs to does. The grad mode the engine set
        is the table's from the next event on, as an internal push that the pass's end pops."""
        task = torch._C._current_graph_task_id()
        if self.pass_task is not None and (task == self.pass_task or self.checkpoint_backward_depth > 0):
            return
        self.catch_up(sync_grad=False)
        if self.pass_task is not None:  # another task: the last pass ended in an exception
            self._end_pass(completed=False)
        self.pass_task = task
        self.pass_grad_depth = len(self.grad_pushes)
        self._perform(self.machine.backward_pass_begin())
        torch.autograd.Variable._execution_engine.queue_callback(lambda: self._end_pass(completed=True))

    def _end_pass(self, completed: bool) -> None:
        self.pass_task = None
        while len(self.grad_pushes) > self.pass_grad_depth and self.grad_pushes[-1][1] is None:
            self.grad_pushes.pop()
            self.machine.grad_pop()
        self._perform(self.machine.backward_pass_end(completed))
        self._mirror()

    def _mirror(self, actions=()) -> None:
        """TE's globals as the table has them (`actions`: the event's, which say whether the
        captured-bit FIFO may have changed)."""
        q = self.te.manager.quantization_state
        q.is_first_fp8_module = self.machine.ownership_available
        q.autocast_depth = self.machine.autocast_depth
        phase = self.machine.checkpoint_phase
        self.te.distributed._IN_ACTIVATION_RECOMPUTE_REGION = phase != "outside"
        self.te.distributed._ACTIVATION_RECOMPUTE_PHASE = phase == "recompute"
        # upstream's FIFO of captured bits: TE's own list follows the table's, by TE's own
        # operations (append at a capture, pop(0) at a recompute entry), so that code watching
        # the list sees each push and pop. Only a capture or an install changes it.
        if not any(a[0] in _FIFO_ACTIONS for a in actions):
            return
        fifo, bits = self._te_fifo(), self.machine.captured_bits
        while len(fifo) > len(bits):
            fifo.pop(0)
        while len(fifo) < len(bits):
            fifo.append(bits[len(fifo)])

    def _te_fifo(self) -> list:
        arf = self.te.distributed.activation_recompute_forward
        return arf._is_first_fp8_module

    # ---- actions -------------------------------------------------------------------------------

    def take_pending(self, name: str) -> Optional[tuple]:
        for i, action in enumerate(self.pending):
            if action[0] == name:
                return self.pending.pop(i)
        return None

    def perform_pending(self) -> None:
        """The decided actions, in order, that TE's code did not perform itself: those of TE's
        functions through TE's functions as installed (the gates let them through), the others
        by the plugin's own code."""
        manager = self.te.manager
        while self.pending:
            action = self.pending[0]
            name = action[0]
            if name not in _GATED:
                self.pending.pop(0)
                self._perform_now(action)
                continue
            meta = self.meta(action[1])
            if name == "registered":
                manager.add_fp8_tensors_to_global_buffer(meta)
            elif name == "stash":
                manager.copy_forward_fp8_meta_tensors_for_recompute(meta)
            elif name in ("save_for_restore", "pop_stash", "replay_stash"):
                manager.get_old_fp8_meta_tensors_for_recompute(meta)
            elif name == "restore":
                manager.restore_fp8_meta_tensors(meta)
            if self.pending and self.pending[0] is action:
                self.pending.pop(0)  # a gate that did not take it (no delayed scaling): nothing to do

    def meta(self, module: int) -> dict:
        return self.modules[module]().fp8_meta

    def _perform(self, actions: List[tuple]) -> None:
        self.pending.extend(actions)
        self.perform_pending()

    def _perform_now(self, action: tuple) -> None:
        manager = self.te.manager
        name, args = action[0], action[1:]
        if name == "forward_update":
            manager.reduce_and_update_fp8_tensors(forward=True)
        elif name == "backward_update":
            manager.reduce_and_update_fp8_tensors(forward=False)
        elif name == "discard_forward_amax":
            self._discard_forward_amax()
        elif name == "stash_for":
            self._stash_for(*args)
        elif name == "release_stash":
            self.stashes.pop(args[0], None)
        # claimed, ownership_captured, ownership_installed: reports, no effect on TE

    # The actions TE has no function for: the plugin's own code on TE's tensors.

    def _discard_forward_amax(self) -> None:
        q = self.te.manager.quantization_state
        for key, histories in q.global_amax_history_buffer.items():
            if key.startswith(self.te.manager.get_fwd_bwd_key(True)):
                for history in histories:
                    history[0].zero_()

    def _stash_for(self, module: int, capture: int) -> None:
        meta = self.meta(module)
        if not self._delayed(meta):
            return
        live = meta["scaling_fwd"]
        per_module = self.stashes.setdefault(capture, {}).setdefault(module, [])
        per_module.append((live.amax_history.clone(), live.scale.clone()))

    def save_for_restore(self, meta: dict) -> None:
        live = meta["scaling_fwd"]
        meta["updated_amax_history_fwd"] = live.amax_history.clone()
        meta["updated_scale_fwd"] = live.scale.clone()

    def pop_stash(self, meta: dict) -> None:
        stash = self.te.manager.quantization_state.fp8_tensors_recompute_buffer[meta[_STASH_KEY]]
        self._make_live(meta, *stash.popleft())

    def replay_stash(self, meta: dict, module: int, capture: int, occurrence: int) -> None:
        self.last_replay = capture
        self._make_live(meta, *self.stashes[capture][module][occurrence])

    @staticmethod
    def _make_live(meta: dict, amax_history, scale) -> None:
        """A stashed forward meta becomes the module's live one (copied in place: TE's casts
        hold the tensors)."""
        meta["scaling_fwd"].amax_history.copy_(amax_history)
        meta["scaling_fwd"].scale.copy_(scale)

    def take_last_replay(self) -> Optional[int]:
        """The capture of the last replay, once (a harness that judges which stash a recompute
        read: conformance/te_observe.py)."""
        capture, self.last_replay = self.last_replay, None
        return capture

    def _delayed(self, meta: dict) -> bool:
        return "recipe" in meta and self.te.quantization._has_delayed_scaling_state(meta)
