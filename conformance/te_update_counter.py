"""Counts TE's FP8 state updates: calls of FP8GlobalStateManager.reduce_and_update_fp8_tensors
(forward=True / False), the measure of the seed's counts and of the conformance harness alike.

It imports nothing, so the GPU check (scripts/te_gpu_seed.py), which runs TE's real CUDA code
outside the harness and its CPU stand-ins, counts exactly as the harness does.
"""

from __future__ import annotations


class UpdateCounter:
    """Wraps the manager's reduce_and_update_fp8_tensors: counts each call, then runs TE's own."""

    def __init__(self, manager, on_update=lambda forward: None):
        self.forward = 0
        self.backward = 0
        self.manager = manager
        self.installed = manager.__dict__["reduce_and_update_fp8_tensors"]
        original = manager.reduce_and_update_fp8_tensors.__func__
        counter = self

        def counting(cls, forward: bool = True):
            if forward:
                counter.forward += 1
            else:
                counter.backward += 1
            on_update(forward)
            return original(cls, forward)

        manager.reduce_and_update_fp8_tensors = classmethod(counting)

    def remove(self) -> None:
        """Puts TE's own function back (a process that runs many programs wraps it once each)."""
        self.manager.reduce_and_update_fp8_tensors = self.installed
