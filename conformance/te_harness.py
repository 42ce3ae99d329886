"""Runs a scenario on Transformer Engine's own code: each statement as the user code it stands for.

The mapping is docs/scenarios.md's; where the language left a choice to the harness, the choice
is written there too ("How the conformance harness runs a scenario"). Counts are calls of
FP8GlobalStateManager.reduce_and_update_fp8_tensors(forward=True/False), per step, as TE's own
tests count them; `raised` is the kind (class name) of each exception that escaped a step.
"""

from __future__ import annotations

import sys
from typing import Dict, List

import torch

import scenario
from scenario import Block, Simple
from te_loader import TE, cuda_reported_available
from te_stubs import ROWS, WIDTH, CudaOnCpu, StubCalled, StubFailed  # activations are (ROWS, WIDTH)
from te_update_counter import UpdateCounter


# Failures of the harness, never results of TE: they end the run instead of counting as an
# exception the program raised (a missing import means a stub is missing).
HARNESS_FAILURES = (StubCalled, StubFailed, ImportError, NameError)


class UserError(Exception):
    """What `raise always|original|recompute` raises (the model's kind "UserError")."""


class Run:
    """One program from a fresh TE process state (the caller forks per program)."""

    def __init__(self, te: TE):
        self.te = te
        # fp8sm's TE plugin, if the process installed it (te_conformance --plugin): a fresh
        # machine, as TE's globals are fresh for every program.
        plugin = sys.modules.get("fp8sm.te")
        if plugin is not None and plugin.active() is not None:
            plugin.reset()
        self.counter = UpdateCounter(te.manager, self.on_update)
        self.executed = set()  # ids of the save and backward statements that ran, and of the
                               # reentrant checkpoints called with grad on, on data
        self.current_module = None  # the module whose forward runs
        self.recipe = te.recipe.DelayedScaling()
        self.modules: Dict[str, torch.nn.Module] = {}
        self.tapes: Dict[str, torch.Tensor] = {}
        self.recomputing = 0  # calls of checkpoint bodies that are recomputes, now running
        self.no_grad_depth = 0
        self.function_depth = 0  # checkpoint bodies running (their values are not the chain's)
        self.closes = 0       # saves, backwards without retain and data so far
        self.fresh = self._leaf()
        self.fresh_input = self.fresh  # what the last close started the chain from (data: no grad)
        self.h = self.fresh   # the chain's current value
        self.tip = self.fresh  # the chain's last value recorded with grad: what a loss is of

    # ---- the program ----------------------------------------------------------------------

    def run(self, program: List[scenario.Statement]) -> dict:
        try:
            return self._run(program)
        finally:
            self.counter.remove()

    def _run(self, program: List[scenario.Statement]) -> dict:
        steps = []
        with CudaOnCpu():
            for step in scenario.steps(program):
                self.counter.forward = self.counter.backward = 0
                raised = []
                try:
                    for statement in step:
                        try:
                            self.block([statement])
                        finally:
                            self.statement_done()
                except HARNESS_FAILURES:
                    raise
                except Exception as e:  # noqa: BLE001  (an escaped exception ends the step)
                    raised.append({"kind": type(e).__name__, "message": str(e)})
                steps.append({"forward_updates": self.counter.forward,
                              "backward_updates": self.counter.backward, "raised": raised})
                self.step_done(steps[-1])
                self._close()  # the next step starts from a fresh input
        return {"steps": steps}

    def block(self, statements: List[scenario.Statement]) -> None:
        for s in statements:
            if isinstance(s, Block):
                self.run_block(s)
            else:
                self.simple(s)

    def run_block(self, b: Block) -> None:
        te = self.te
        if b.op == "autocast":
            self.user_autocast(b.mode == "on", lambda: self.block(b.body))
        elif b.op == "no_grad":
            # Not part of the graph: the chain goes on from before the block.
            before, closes = (self.h, self.tip), self.closes
            self.no_grad_depth += 1
            try:
                with torch.no_grad():
                    self.block(b.body)
            finally:
                self.no_grad_depth -= 1
                self._resume(before, closes)
        elif b.op == "try":
            before, closes = (self.h, self.tip), self.closes
            try:
                self.block(b.body)
            except HARNESS_FAILURES:
                raise
            except Exception:  # noqa: BLE001  (`try` catches any exception)
                self._resume(before, closes)
        elif b.op == "checkpoint":
            if b.mode == "reentrant" and torch.is_grad_enabled() and not self.h.requires_grad:
                self.executed.add(id(b))  # torch records no node: I8's reference parts here
            self.set_chain(self.checkpoint_call(
                lambda checkpoint: te.distributed.checkpoint(self._body_function(b.body, checkpoint), self.h,
                                                             use_reentrant=b.mode == "reentrant")))
        else:
            raise ValueError(f"unknown block {b.op}")

    def simple(self, s: Simple) -> None:
        if s.op == "linear":
            module = self.module(s.name)
            self.current_module = s.name
            try:
                self.set_chain(self.module_call(s.name, module, lambda: module(self.h)))
            finally:
                self.current_module = None
        elif s.op == "raise":
            if s.name == "always" or (s.name == "original") == (self.recomputing == 0):
                raise UserError(f"raise {s.name}")
        elif s.op == "recompute_uncaptured":
            def enter():
                with self.te.distributed.activation_recompute_forward(activation_recompute=True,
                                                                       recompute_phase=True):
                    pass
            self.recompute_uncaptured(enter)
        elif s.op == "save":
            self.executed.add(id(s))
            self.tapes[s.name] = self._loss()
            self._close()
        elif s.op == "backward":
            self.executed.add(id(s))
            if s.name is None:
                loss = self._loss()
                if not s.retain:
                    self._close()  # torch frees the graph even when its backward fails
            else:
                # A tape whose `save` was skipped (an exception ended its step first) holds an
                # empty graph, as in the model: its backward is an empty pass.
                loss = self.tapes.get(s.name)
                if loss is None:
                    with torch.enable_grad():
                        loss = self.tapes[s.name] = self._leaf().sum()
            self.backward_pass(lambda: loss.backward(retain_graph=s.retain))
        elif s.op == "data":
            self._close(data=True)
        else:
            raise ValueError(f"unknown statement {s.op}")

    # ---- where an observer looks (te_observe.ObservedRun): here they only run the code -------

    def on_update(self, forward: bool) -> None:
        """TE called reduce_and_update_fp8_tensors(forward)."""

    def statement_done(self) -> None:
        """A top-level statement ended, normally or raising."""

    def step_done(self, step: dict) -> None:
        """A step ended; `step` is its result."""

    def user_autocast(self, enabled: bool, body) -> None:
        with self.te.quantization.autocast(enabled=enabled, recipe=self.recipe):
            body()

    def backward_pass(self, run_pass) -> None:
        run_pass()

    def checkpoint_call(self, call):
        return call(0)

    def function_call(self, checkpoint: int, recompute: bool, body):
        return body()

    def recompute_uncaptured(self, enter) -> None:
        enter()

    def module_call(self, name: str, module, call):
        return call()

    # ---- pieces ---------------------------------------------------------------------------

    def module(self, name: str) -> torch.nn.Module:
        if name not in self.modules:
            with cuda_reported_available():
                self.modules[name] = self.te.linear.Linear(WIDTH, WIDTH, bias=False, params_dtype=torch.float32)
        return self.modules[name]

    def _body_function(self, body: List[scenario.Statement], checkpoint: int):
        """A checkpoint's function: its first call is the original forward, any later one a
        recompute (TE calls it again from the backward). `checkpoint` numbers the call."""
        calls = [0]

        def function(x: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            recompute = calls[0] > 1
            outer = self.h
            self.h = x
            self.recomputing += recompute
            self.function_depth += 1
            try:
                self.function_call(checkpoint, recompute, lambda: self.block(body))
                return self.h
            finally:
                self.recomputing -= recompute
                self.function_depth -= 1
                self.h = outer

        return function

    def set_chain(self, value: torch.Tensor) -> None:
        self.h = value
        # A value that does not require grad (a checkpoint on `data`) is in no graph: the tip
        # stays, the fresh leaf of an empty graph.
        if self.no_grad_depth == 0 and self.function_depth == 0 and value.requires_grad:
            self.tip = value

    def _loss(self) -> torch.Tensor:
        with torch.enable_grad():  # a loss of the graph's tip, even inside a no_grad block
            return self.tip.sum()

    def _leaf(self) -> torch.Tensor:
        return torch.ones(ROWS, WIDTH, requires_grad=True)  # the numbers never matter, only TE's state

    def _close(self, data: bool = False) -> None:
        """A save, a backward without retain or `data`: what follows records a new graph. After
        `data` the chain restarts from a batch that does not require grad, and the tip is a
        fresh leaf that does: the loss of an empty graph, which a backward passes over."""
        self.closes += 1
        self.fresh = self._leaf()
        self.fresh_input = torch.ones(ROWS, WIDTH) if data else self.fresh
        self.h, self.tip = self.fresh_input, self.fresh

    def _resume(self, before, closes: int) -> None:
        """After a no_grad block, or a try that caught: the chain from before the block, unless
        the block closed the graph, then from the fresh input of that close."""
        if self.closes == closes:
            self.h, self.tip = before
        else:
            self.h, self.tip = self.fresh_input, self.fresh


def run_program(te: TE, text: str) -> dict:
    return Run(te).run(scenario.parse(text))
