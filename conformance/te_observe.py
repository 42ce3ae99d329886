"""The invariants of spec §5 checked on what Transformer Engine itself does.

te_harness.Run runs a program on TE and counts updates. ObservedRun runs it the same way and
also watches TE's own state code, with wrappers around its functions (installed for one run,
removed after it) and reads of its globals, and judges the invariants from that alone: no
model is consulted. Each check says which of TE's observable facts it reads:

- I1  TE's forward update calls (reduce_and_update_fp8_tensors(forward=True)) against the user
      autocast exits the program makes: one during each exit that leaves depth 0 (TE's own
      autocast_depth) with FP8 enabled and grad on as the program sets it, none elsewhere.
- I2  per backward pass (one `backward` statement): the Linear backwards that ran with FP8
      (seen where TE hands the restored tensors to the GEMM, after the unpack) and TE's
      backward update calls: exactly one update if an FP8 backward ran and the pass completed,
      and no FP8 backward after it.
- I4  TE's recompute stash (quantization_state.fp8_tensors_recompute_buffer, a deque per
      module) and, in upstream TE, the ownership FIFO (activation_recompute_forward's list):
      every entry is tagged with the checkpoint call that pushed it, and must be popped by that
      checkpoint's recompute; a pop that finds nothing, or an entry left at a step's end, is a
      violation. Which entry a pop took is seen, not assumed: a stash entry by its identity
      (the one gone from the deque), a FIFO entry through the list's own pop (_WatchedFifo).
- I6  TE's globals after each top-level statement: no checkpoint region or phase flag, FP8
      disabled, the ownership bit (is_first_fp8_module) down outside autocast.
- I7  TE's autocast depth never negative, and zero at each step's end.
- I8  the same program without its checkpoints, also run on TE (by the caller: judge_transparency).
- I9  TE's registrations in the global amax buffer (add_fp8_tensors_to_global_buffer calls that
      add the module): once per module, never during a recompute, and before any update that
      reduces an amax the module's FP8 casts produced.

- I3  TE's ownership bit (quantization_state.is_first_fp8_module) read after each TE call that
      may change it (autocast entry and exit, the activation-recompute context's entry and
      exit, the claim), per scope: an outermost user autocast, a recompute (the context entered
      in its recompute phase). The owners of a scope are the Linear nodes whose claim returned
      True while it was the innermost. An owner is live unless its node was dropped unused:
      torch freed its autograd context (a weak reference, read at the step's end) before its
      backward ran, as for the nodes of a `try` that caught, of a failed recompute, of a
      non-reentrant recompute, or of a step that an exception ended. At most one live owner per scope,
      no rise of the bit inside a scope with a live owner, and no scope exit above the bit's
      value at its entry.

- I5  TE's own scaling tensors, given a meaning by the stubbed kernels: a cast (the forward
      GEMM stub) accumulates into row 0 of the module's forward amax history the tag of what
      it computed (its module, its step, the scaling it saw) and marks whether a recompute
      cast it and the oldest step cast; the fused update stub folds a non-empty row 0 into
      the scale, which names the history (the same history and row 0 give the same name).
      TE's stash, pop and restore copy these tensors as they are. A recompute's k-th cast of
      a module must see the scaling that module's k-th cast saw in the checkpoint's original
      forward, the scaling after the recompute (at its activation-recompute context's exit,
      after any update the autocast inside it made) must be what it was before its first pop,
      and no forward update folds a row 0 holding a recompute's or an earlier step's amax.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import sys
import weakref
from typing import Dict, List, Optional, Set

import scenario
import te_harness
import te_stubs
from scenario import Block, Simple


class Violations:
    """The first reason of each invariant violated in the current step."""

    def __init__(self):
        self.step: Dict[str, str] = {}

    def add(self, invariant: str, reason: str) -> None:
        self.step.setdefault(invariant, reason)

    def take(self) -> Dict[str, str]:
        step, self.step = self.step, {}
        return step


class _Patch:
    """Replaces attributes for one run and puts the originals back after it."""

    def __init__(self):
        self.saved = []

    def set(self, owner, name: str, value) -> None:
        self.saved.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self) -> None:
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)
        self.saved.clear()


class _WatchedFifo(list):
    """Upstream TE's captured-bit FIFO during an observed run: the same entries, and beside
    them the checkpoint call that pushed each (None: pushed before the run). TE appends and
    pops (TE 2.20.2: pop(0)); both move the tags with the entries, so a pop tells whose entry
    TE took, from whichever end it took it. Any other change of the list stops the run: the
    observer would no longer know whose entries it holds."""

    def __init__(self, entries, run: "ObservedRun"):
        super().__init__(entries)
        self.run = run
        self.tags: List[Optional[int]] = [None] * len(entries)

    def append(self, value) -> None:
        super().append(value)
        self.tags.append(self.run.calling[-1] if self.run.calling else 0)

    def pop(self, index=-1):
        value = super().pop(index)
        self.run.fifo_popped.append(self.tags.pop(index))
        return value

    def _not_followed(self, *args, **kwargs):
        raise te_stubs.StubCalled("TE changed its ownership FIFO other than by append and pop: "
                                  "te_observe._WatchedFifo must follow it")

    insert = extend = remove = clear = sort = reverse = _not_followed
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _not_followed


class ObservedRun(te_harness.Run):
    """A Run that also judges I1, I2, I4, I6, I7 and I9 on TE's own calls and globals."""

    def __init__(self, te):
        super().__init__(te)
        self.violations = Violations()
        self.distributed = te.distributed
        self.qstate = lambda: te.manager.quantization_state
        self.upstream_fifo = getattr(te.distributed.activation_recompute_forward, "_is_first_fp8_module", None)
        # I1: the user autocast exit in progress, and whether it owes an update.
        self.exits: List[dict] = []
        # I2: the backward pass in progress.
        self.pass_fp8_backwards = 0
        self.pass_updates = 0
        self.in_pass = False
        # I4: checkpoint calls (the functions running, original forwards and recomputes, are
        # self.extents), the checkpoint call of each stash entry (by the entry's id; the entry
        # is kept with it, so the id stays its own until TE pops it), and the tags of the
        # entries TE's FIFO popped in the current activation-recompute entry (_WatchedFifo).
        self.next_checkpoint = 0
        self.calling: List[int] = []
        self.stash_tags: Dict[int, tuple] = {}
        # The checkpoint calls that entered their activation-recompute region (a plain call,
        # #3394's, or a nested one none of whose inputs needs grad, enters none): a stash entry
        # belongs to the innermost of those running, as the model's extents have it.
        self.region_calls: Set[int] = set()
        # With fp8sm's TE plugin under fp8sm, a stash is the checkpoint instance's, kept by the
        # plugin (its capture ids): the checkpoint call whose original forward made each capture.
        self.capture_calls: Dict[int, int] = {}
        self.fifo_popped: List[Optional[int]] = []
        self.bit_popped_for: Optional[int] = None
        self.uncaptured = False
        # I9: registrations and the modules whose FP8 casts left an amax for the next update.
        self.registered: Dict[str, int] = {}
        self.cast: Dict[bool, set] = {True: set(), False: set()}
        self.weights: Dict[int, str] = {}
        # I3: the ownership bit after the last TE call that may change it, the scopes open and
        # closed in this step, the owners of each (weak references to the nodes' contexts).
        self.last_bit = False
        self.scopes: List[dict] = []
        self.closed_scopes: List[dict] = []
        self.revivals: List[list] = []
        self.entering_user_autocast = False
        self.linear_contexts: List[object] = []
        # The owners' records by their context's id while it lives (a dead context's id may
        # be reused): where a backward finds its owner record.
        self.owner_of_context: Dict[int, dict] = {}
        # I5: the step, the checkpoint extents open (original forwards and recomputes), what
        # each module saw per checkpoint, and the names of amax sets and histories.
        self.step_number = 1
        self.extents: List[dict] = []
        # Per recompute entered and not yet left: its modules' forward scaling before their
        # first pop, checked when the recompute ends (its activation-recompute context's exit,
        # after the autocast inside it, whose exit may update), as the model's RecomputeExit.
        self.recomputes_open: List[Dict[str, object]] = []
        self.seen: Dict[tuple, List[float]] = {}
        self.tags: Dict[float, frozenset] = {}  # what each amax number of this run stands for
        self.updating_forward = True

    # ---- the run -----------------------------------------------------------------------------

    def run(self, program: List[scenario.Statement]) -> dict:
        patch = _Patch()
        self._keep_globals(patch)
        self._install(patch)
        try:
            result = super().run(program)
        finally:
            patch.undo()
        return result

    def _keep_globals(self, patch: _Patch) -> None:
        """TE's process-global FP8 state (spec §2.1: the quantization state, the checkpoint
        region and phase flags, upstream's FIFO) is put back after the run as it was before it
        (the run works on copies). A second run in the same process, the program without
        checkpoints that judge_transparency compares with, then starts where a process of its
        own would, not where this run left TE: a recompute that found the FIFO empty leaves
        the flags set (spec §3.4), and a Linear forward in the phase then takes the
        recompute's paths (a restore of what it never saved: KeyError)."""
        te = self.te
        for name in ("_IN_ACTIVATION_RECOMPUTE_REGION", "_ACTIVATION_RECOMPUTE_PHASE"):
            patch.set(te.distributed, name, getattr(te.distributed, name))
        patch.set(te.manager, "quantization_state", copy.deepcopy(te.manager.quantization_state))
        if self.upstream_fifo is not None:
            self.upstream_fifo = _WatchedFifo(self.upstream_fifo, self)
            # The class that holds the FIFO (fp8sm's TE plugin puts a subclass in TE's place).
            holder = next(c for c in te.distributed.activation_recompute_forward.__mro__
                          if "_is_first_fp8_module" in c.__dict__)
            patch.set(holder, "_is_first_fp8_module", self.upstream_fifo)

    def statement_done(self) -> None:
        q = self.qstate()
        if self.distributed._IN_ACTIVATION_RECOMPUTE_REGION or self.distributed._ACTIVATION_RECOMPUTE_PHASE:
            self.violations.add("I6", "the checkpoint region/phase flags stay set after a top-level statement")
        if q.fp8_enabled:
            self.violations.add("I6", "FP8 stays enabled after a top-level statement")
        if q.autocast_depth == 0 and q.is_first_fp8_module:
            self.violations.add("I6", "the ownership bit is left set outside any autocast")
        if q.autocast_depth < 0:
            self.violations.add("I7", "the autocast depth is negative")

    @staticmethod
    def _live(owner: dict) -> bool:
        return owner["context"]() is not None or owner["backward_ran"]

    def _ownership_violations(self) -> List[tuple]:
        found = []
        for scope in self.closed_scopes:
            live = sum(1 for owner in scope["owners"] if self._live(owner))
            if live > 1:
                kind = "a recompute" if scope["recompute"] else "an autocast scope"
                found.append(("I3", f"{live} live owners of the backward update in {kind}"))
        for owners in self.revivals:
            if any(self._live(owner) for owner in owners):
                found.append(("I3", "ownership revived inside a scope whose owner is still live"))
        return found

    def step_done(self, step: dict) -> None:
        q = self.qstate()
        if step["raised"]:
            # What the step recorded is dropped unused (the model abandons the step's graph).
            self.h = self.tip = self.fresh
        if self._ownership_violations():
            # Unreachable graphs can hold on in reference cycles (an exception's traceback):
            # collect them before believing an owner is live.
            gc.collect()
            for invariant, reason in self._ownership_violations():
                self.violations.add(invariant, reason)
        self.closed_scopes.clear()
        self.revivals.clear()
        self.step_number += 1
        if q.autocast_depth != 0:
            self.violations.add("I7", f"the autocast depth is {q.autocast_depth} at the step's end")
        for position, entries in enumerate(q.fp8_tensors_recompute_buffer):
            if len(entries):
                self.violations.add("I4", f"stash {position} ends the step with {len(entries)} entries")
        if self.upstream_fifo is not None and len(self.upstream_fifo):
            self.violations.add("I4", f"the captured-bit FIFO ends the step with {len(self.upstream_fifo)} entries")
        step["violations"] = self.violations.take()
        step["numerics"] = self.numerics()

    # ---- the program's own structure (called by Run) -----------------------------------------

    def user_autocast(self, enabled: bool, body) -> None:
        te = self.te
        context = te.quantization.autocast(enabled=enabled, recipe=self.recipe)
        self.entering_user_autocast = True
        try:
            context.__enter__()
        finally:
            self.entering_user_autocast = False
        try:
            body()
        except BaseException as e:
            self._exit_autocast(context, enabled, e)
            raise
        self._exit_autocast(context, enabled, None)

    def _exit_autocast(self, context, enabled: bool, error) -> None:
        owed = enabled and self.qstate().autocast_depth == 1 and self.no_grad_depth == 0
        self.exits.append({"owed": owed, "updates": 0})
        try:
            if error is None:
                context.__exit__(None, None, None)
            else:
                context.__exit__(type(error), error, error.__traceback__)
        finally:
            done = self.exits.pop()
            if done["owed"] and done["updates"] == 0:
                self.violations.add("I1", "an outermost enabled autocast exit with grad on made no forward update")

    def backward_pass(self, run_pass) -> None:
        self.in_pass, self.pass_fp8_backwards, self.pass_updates = True, 0, 0
        try:
            run_pass()
        finally:
            self.in_pass = False
        if self.pass_fp8_backwards > 0 and self.pass_updates == 0:
            self.violations.add("I2", "a backward pass ran FP8 module backwards but made no backward update")

    def checkpoint_call(self, call):
        self.next_checkpoint += 1
        self.calling.append(self.next_checkpoint)
        try:
            return call(self.next_checkpoint)
        finally:
            self.calling.pop()

    def function_call(self, checkpoint: int, recompute: bool, body):
        if recompute and self.bit_popped_for is not None:
            if self.bit_popped_for != checkpoint:
                self.violations.add("I4", "a recompute installs the ownership bit another checkpoint captured")
            self.bit_popped_for = None
        extent = {"checkpoint": checkpoint, "recompute": recompute, "occurrences": {}, "before_pop": {}}
        self.extents.append(extent)
        try:
            return body()
        finally:
            self.extents.pop()
            if recompute and self.recomputes_open:
                self.recomputes_open[-1].update(extent["before_pop"])
            else:
                self._check_scaling_kept(extent["before_pop"])

    def _check_scaling_kept(self, before_pop: Dict[str, object]) -> None:
        for name, before in before_pop.items():
            if self._meta_state(name) != before:
                self.violations.add("I5", f"a recompute leaves the forward scaling of {name} changed")

    def recompute_uncaptured(self, enter) -> None:
        self.uncaptured = True
        try:
            enter()
        finally:
            self.uncaptured = False

    def module_call(self, name: str, module, call):
        self.weights[module.weight.data_ptr()] = name
        return call()

    # ---- TE's calls --------------------------------------------------------------------------

    def bit_event(self, kind: str, raised: bool = False) -> None:
        """After a TE call that may change the ownership bit: the scopes of I3 (the model's
        OwnershipScopes, on TE's bit and depth)."""
        q = self.qstate()
        before, after = self.last_bit, bool(q.is_first_fp8_module)
        self.last_bit = after
        closes = ((kind == "autocast_exit" and q.autocast_depth == 0 and self.scopes and not self.scopes[-1]["recompute"])
                  or (kind == "recompute_exit" and self.scopes and self.scopes[-1]["recompute"]))
        if closes:
            scope = self.scopes.pop()
            if after and not scope["entry"]:
                where = "a recompute" if scope["recompute"] else "an autocast scope"
                self.violations.add("I3", f"the ownership bit leaves {where} true where it entered false")
            self.closed_scopes.append(scope)
        elif (kind == "user_autocast_enter" and q.autocast_depth == 1) or (kind == "recompute_enter" and not raised):
            self.scopes.append({"recompute": kind == "recompute_enter", "entry": before, "owners": []})
        elif not before and after and self.scopes and self.scopes[-1]["owners"]:
            self.revivals.append(list(self.scopes[-1]["owners"]))
        # I5's check of the scaling a recompute leaves (function_call keeps what it needs).
        if kind == "recompute_enter" and not raised:
            self.recomputes_open.append({})
        elif kind == "recompute_exit" and self.recomputes_open:
            self._check_scaling_kept(self.recomputes_open.pop())

    def claimed(self, result: bool) -> None:
        self.bit_event("claim")
        if result and self.scopes and self.linear_contexts and self.linear_contexts[-1] is not None:
            context, key = self.linear_contexts[-1], id(self.linear_contexts[-1])
            owner = {"context": weakref.ref(context, lambda _: self.owner_of_context.pop(key, None)),
                     "backward_ran": False}
            self.owner_of_context[key] = owner
            self.scopes[-1]["owners"].append(owner)

    def on_update(self, forward: bool) -> None:
        self.updating_forward = forward
        if forward:
            if self.exits and self.exits[-1]["owed"] and self.exits[-1]["updates"] == 0:
                self.exits[-1]["updates"] += 1
            elif self.exits and self.exits[-1]["owed"]:
                self.violations.add("I1", "a second forward update at one autocast exit")
            else:
                self.violations.add("I1", "a forward update outside an outermost user autocast exit")
        else:
            self.pass_updates += 1
            if self.in_pass and self.pass_updates == 2:
                self.violations.add("I2", "a backward pass makes a second backward update")
        for name in sorted(self.cast[forward]):
            if name not in self.registered:
                self.violations.add("I9", f"{name} cast in FP8 but its amax is not registered before the update")
        self.cast[forward].clear()

    # ---- I5: the numbers (see the module's docstring) ------------------------------------------

    def _name(self, key) -> int:
        """A number per distinct value, exact in the float32 tensors that carry it, and the
        same in every process (the program and its reference run apart): a stable hash of the
        value. Two values share a number with probability about 2**-24 per pair."""
        digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
        return 2 + int.from_bytes(digest, "little") % (2**24 - 2)

    def _meta(self, name: str, forward: bool = True):
        return self.modules[name].fp8_meta["scaling_fwd" if forward else "scaling_bwd"]

    def _meta_state(self, name: str, forward: bool = True) -> tuple:
        meta = self._meta(name, forward)
        return float(meta.scale.reshape(-1)[0]), float(meta.amax_history[0][0])

    def numerics(self) -> Dict[str, tuple]:
        """Each module's forward and backward scaling and row 0, by name (I8 compares them)."""
        return {name: self._meta_state(name, True) + self._meta_state(name, False)
                for name, module in sorted(self.modules.items()) if "scaling_fwd" in module.fp8_meta}

    def _accumulate(self, name: str, forward: bool, history: float) -> None:
        row = self._meta(name, forward).amax_history[0]
        tags = self.tags.get(float(row[0]), frozenset()) | {(name, self.step_number, history, forward)}
        row[0] = self._name(("amax", sorted(tags)))
        self.tags[float(row[0])] = tags
        if forward:  # three columns (input, weight, output); I5 reads these of the forward only
            row[1] = max(float(row[1]), 1.0 if self.recomputing else 0.0)
            row[2] = max(float(row[2]), 1000.0 - self.step_number)  # the oldest step's, as a maximum

    def _cast(self, name: str) -> None:
        history = self._meta_state(name)[0]  # the history the cast sees
        for extent in self.extents:
            key = (extent["checkpoint"], name)
            if not extent["recompute"]:
                self.seen.setdefault(key, []).append(history)
                continue
            k = extent["occurrences"].get(name, 0)
            extent["occurrences"][name] = k + 1
            seen = self.seen.get(key, [])
            if k < len(seen) and seen[k] != history:
                self.violations.add("I5", f"a recompute of {name} sees other forward scaling than its original forward")
        self._accumulate(name, True, history)

    def fold(self, amax_histories, scales) -> None:
        for history, scale in zip(amax_histories, scales):
            row = history[0]
            if float(row[0]) == 0:
                continue
            if self.updating_forward:
                if float(row[1]) > 0:
                    self.violations.add("I5", "a forward update folds an amax produced by a recompute")
                if 1000.0 - float(row[2]) < self.step_number:
                    self.violations.add("I5", "a forward update folds an amax produced by an earlier step")
            scale.reshape(-1)[0] = self._name(("history", float(scale.reshape(-1)[0]), float(row[0])))
            row.zero_()

    def on_gemm(self, weight_ptr: int, fp8: bool, forward: bool) -> None:
        name = self.weights.get(weight_ptr, "?")
        if fp8 and forward:
            self._cast(name)
        elif fp8 and name in self.modules:
            self._accumulate(name, False, self._meta_state(name, False)[0])
        if fp8:
            self.cast[forward].add(name)
        if not forward and fp8:
            self.pass_fp8_backwards += 1
            if self.pass_updates > 0:
                self.violations.add("I2", "an FP8 module backward runs after the pass's backward update")

    def _install(self, patch: _Patch) -> None:
        te, run = self.te, self
        manager, distributed = te.manager, te.distributed

        push = manager.__dict__["copy_forward_fp8_meta_tensors_for_recompute"].__func__
        pop = manager.__dict__["get_old_fp8_meta_tensors_for_recompute"].__func__
        register = manager.__dict__["add_fp8_tensors_to_global_buffer"].__func__
        key = "global_fp8_buffer_pos_fwd_recompute"

        def stash_entries(cls, fp8_meta) -> list:
            """The entries of the module's stash deque, oldest first ([] before its first stash)."""
            buffer, position = cls.quantization_state.fp8_tensors_recompute_buffer, fp8_meta.get(key)
            return list(buffer[position]) if isinstance(position, int) and 0 <= position < len(buffer) else []

        def stash_owner():
            """The checkpoint a stash entry pushed now belongs to: the innermost extent that
            entered its region, if it is an original forward (None inside a recompute, 0
            outside any: the model's CheckpointNumerics::stash)."""
            for extent in reversed(run.extents):
                if extent["recompute"]:
                    return None
                if extent["checkpoint"] in run.region_calls:
                    return extent["checkpoint"]
            return 0

        def stash_push(cls, fp8_meta):
            before = {id(entry) for entry in stash_entries(cls, fp8_meta)}
            push(cls, fp8_meta)
            for entry in stash_entries(cls, fp8_meta):
                if id(entry) not in before:
                    run.stash_tags[id(entry)] = (entry, stash_owner())

        def stash_pop(cls, fp8_meta):
            recomputes = [e for e in run.extents if e["recompute"]]
            name = run.current_module
            if recomputes and name is not None and name not in recomputes[-1]["before_pop"]:
                recomputes[-1]["before_pop"][name] = run._meta_state(name)
            before = stash_entries(cls, fp8_meta)
            try:
                pop(cls, fp8_meta)
            except (KeyError, IndexError):
                run.violations.add("I4", "a recompute's stash pop found nothing")
                raise
            left = {id(entry) for entry in stash_entries(cls, fp8_meta)}
            taken = [entry for entry in before if id(entry) not in left]  # the entry TE popped
            tag = run.stash_tags.pop(id(taken[0]), (None, None))[1] if taken else None
            replayed = _plugin_replay()
            if not taken and replayed is not None:
                tag = run.capture_calls.get(replayed)  # the plugin replayed that checkpoint's stash
            # Paired with the innermost recompute running (none outside one: never paired).
            if tag is None or not recomputes or tag != recomputes[-1]["checkpoint"]:
                run.violations.add("I4", "a stash entry is popped by another checkpoint's recompute")

        def registration(cls, fp8_meta):
            before = sum(len(v) for v in cls.quantization_state.global_amax_buffer.values())
            register(cls, fp8_meta)
            if sum(len(v) for v in cls.quantization_state.global_amax_buffer.values()) == before:
                return
            name = run.current_module or "?"
            if run.recomputing:
                run.violations.add("I9", f"{name} registers during a recompute")
            run.registered[name] = run.registered.get(name, 0) + 1
            if run.registered[name] == 2:
                run.violations.add("I9", f"{name} registers twice")

        restore = manager.__dict__["restore_fp8_meta_tensors"].__func__

        def restore_popped(fp8_meta):
            try:
                restore(fp8_meta)
            except (KeyError, IndexError):
                run.violations.add("I4", "a restore found nothing saved")
                raise

        patch.set(manager, "restore_fp8_meta_tensors", staticmethod(restore_popped))
        patch.set(manager, "copy_forward_fp8_meta_tensors_for_recompute", classmethod(stash_push))
        patch.set(manager, "get_old_fp8_meta_tensors_for_recompute", classmethod(stash_pop))
        patch.set(manager, "add_fp8_tensors_to_global_buffer", classmethod(registration))

        arf = distributed.activation_recompute_forward
        enter = arf.__dict__["__enter__"]

        def arf_enter(self_):
            run.fifo_popped = []
            if self_.activation_recompute and not self_.recompute_phase and run.calling:
                run.region_calls.add(run.calling[-1])
                if getattr(self_, "capture", None) is not None:
                    run.capture_calls[self_.capture] = run.calling[-1]
            try:
                result = enter(self_)
            except (KeyError, IndexError):
                # A pop that found nothing (the model's rule: these kinds, not the PR's
                # RuntimeError for a state never captured, which is its guard working).
                if self_.activation_recompute and self_.recompute_phase:
                    run.violations.add("I4", "a recompute found no captured ownership bit")
                raise
            if run.fifo_popped:
                tag = run.fifo_popped[-1]
                if run.uncaptured:
                    run.violations.add("I4", "a recompute nobody captured takes another checkpoint's bit")
                else:
                    run.bit_popped_for = tag
            return result

        patch.set(arf, "__enter__", arf_enter)

        # I3: every call that may change the ownership bit.
        def bit_watched(function, kind_of):
            def watched(*args, **kwargs):
                try:
                    result = function(*args, **kwargs)
                except Exception:
                    run.bit_event(kind_of(args), raised=True)
                    raise
                run.bit_event(kind_of(args))
                return result
            return watched

        def arf_kind(entering):
            def kind(args):
                self_ = args[0]
                if self_.activation_recompute and self_.recompute_phase:
                    return "recompute_enter" if entering else "recompute_exit"
                return "arf"
            return kind

        patch.set(arf, "__enter__", bit_watched(arf.__dict__["__enter__"], arf_kind(True)))
        patch.set(arf, "__exit__", bit_watched(arf.__dict__["__exit__"], arf_kind(False)))
        autocast = te.quantization.autocast
        patch.set(autocast, "__enter__", bit_watched(
            autocast.__dict__["__enter__"], lambda args: "user_autocast_enter" if run.entering_user_autocast else "autocast_enter"))
        patch.set(autocast, "__exit__", bit_watched(autocast.__dict__["__exit__"], lambda args: "autocast_exit"))
        claim = te.linear._check_fp8_reduce_and_update

        def watched_claim():
            result = claim()
            run.claimed(result)
            return result

        patch.set(te.linear, "_check_fp8_reduce_and_update", watched_claim)
        linear_forward = te.linear._Linear.__dict__["forward"].__func__

        def forward_with_context(ctx, *args, **kwargs):
            run.linear_contexts.append(ctx)
            try:
                return linear_forward(ctx, *args, **kwargs)
            finally:
                run.linear_contexts.pop()

        patch.set(te.linear._Linear, "forward", staticmethod(forward_with_context))
        linear_backward = te.linear._Linear.__dict__["backward"].__func__

        def backward_noted(ctx, *args, **kwargs):
            # Ran means completed (the model's Node::backward_ran): a backward whose unpack
            # failed (its recompute raised) made no update, and its node is dropped unused
            # with the step the exception ends.
            grads = linear_backward(ctx, *args, **kwargs)
            if id(ctx) in run.owner_of_context:
                run.owner_of_context[id(ctx)]["backward_ran"] = True
            return grads

        patch.set(te.linear._Linear, "backward", staticmethod(backward_noted))
        patch.set(te_stubs, "GEMM_OBSERVER", run.on_gemm)
        patch.set(te_stubs, "FOLD_OBSERVER", run.fold)


def _plugin_replay() -> Optional[int]:
    """The capture whose stash fp8sm's TE plugin replayed in the pop just made, if any."""
    plugin = sys.modules.get("fp8sm.te")
    active = plugin.active() if plugin is not None else None
    return active.take_last_replay() if active is not None else None


def run_observed(te, text: str) -> dict:
    """The program's steps with their violations and numerics, and `executed` (the preorder
    indices of the save and backward statements that ran, and of the reentrant checkpoints
    called with grad on, on data: diverged_steps needs them)."""
    program = scenario.parse(text)
    run = ObservedRun(te)
    result = run.run(program)
    index = statement_indices(program)
    result["executed"] = sorted(index[i] for i in run.executed)
    return result


# ---- I8 -----------------------------------------------------------------------------------------

def without_checkpoints(program: List[scenario.Statement]) -> List[scenario.Statement]:
    """The program with each checkpoint block replaced by its body and recompute_uncaptured left
    out (the model's reference, spec/scenario_transform.cpp)."""
    out: List[scenario.Statement] = []
    for s in program:
        if isinstance(s, Block) and s.op == "checkpoint":
            out.extend(without_checkpoints(s.body))
        elif isinstance(s, Block):
            out.append(Block(s.op, s.mode, without_checkpoints(s.body)))
        elif s.op != "recompute_uncaptured":
            out.append(s)
    return out


def statement_indices(program: List[scenario.Statement]) -> Dict[int, int]:
    """id of each statement -> its index in a preorder walk (the same in every process)."""
    out: Dict[int, int] = {}

    def walk(statements) -> None:
        for s in statements:
            out[id(s)] = len(out)
            if isinstance(s, Block):
                walk(s.body)

    walk(program)
    return out


def diverged_steps(program: List[scenario.Statement], executed: set) -> List[bool]:
    """Per step: whether the program has parted from its reference by the step's end, for
    reasons that are not the FP8 state (the model's ReferenceDivergence): a recompute-specific
    statement, a backward of a tape a backward without retain ran over since its save, or a
    reentrant checkpoint called with grad on, on an input without grad (torch records no node).
    `executed`: preorder indices (statement_indices) of the save/backward statements the run
    executed and of such checkpoints."""
    index = statement_indices(program)
    diverged = False
    freed: Dict[str, bool] = {}

    def walk(statements, inside_checkpoint: bool) -> None:
        nonlocal diverged
        for s in statements:
            if isinstance(s, Block):
                diverged = diverged or (s.op == "checkpoint" and index[id(s)] in executed)
                walk(s.body, inside_checkpoint or s.op == "checkpoint")
                continue
            if s.op == "recompute_uncaptured" or (inside_checkpoint and s.op == "raise" and s.name != "always"):
                diverged = True
            if s.op in ("save", "backward") and s.name is not None and index[id(s)] in executed:
                if s.op == "save":
                    freed[s.name] = False
                else:
                    diverged = diverged or freed.get(s.name, False)
                    freed[s.name] = freed.get(s.name, False) or not s.retain

    out = []
    for step in scenario.steps(program):
        walk(step, False)
        out.append(diverged)
    return out


def judge_transparency(steps: List[dict], reference: List[dict], diverged: List[bool]) -> None:
    """Adds I8 to the steps of `steps` that differ from the reference's, as the model judges:
    the first step whose exceptions differ ends the comparison (a violation unless both
    raised only the program's own UserError), a diverged step ends it silently."""
    for i, step in enumerate(steps):
        if i >= len(reference) or diverged[i]:
            return
        want = reference[i]
        kinds = [r["kind"] for r in step["raised"]]
        if kinds != [r["kind"] for r in want["raised"]]:
            if not (all(k == "UserError" for k in kinds) and all(r["kind"] == "UserError" for r in want["raised"])):
                step["violations"].setdefault("I8", "the program raises where the program without checkpoints does not, or otherwise")
            return
        if (step["forward_updates"], step["backward_updates"]) != (want["forward_updates"], want["backward_updates"]):
            step["violations"].setdefault(
                "I8", f"counts {step['forward_updates']}/{step['backward_updates']} where the program without "
                      f"checkpoints gives {want['forward_updates']}/{want['backward_updates']}")
        elif step["numerics"] != want["numerics"]:
            step["violations"].setdefault("I8", "amax histories or scales differ from the program without checkpoints")
