"""The pool's own tests: a program in a reused worker gives what it gives in a fresh process,
state a program leaves behind is caught and named (also where the reset does not look, and
where it misses a place it should restore), and a program that hangs or kills its worker is a
harness failure.

Run by `scripts/te-conformance.sh --self-test` (TE_SOURCE: the TE tree, EXPLORER: the binary).
"""

from __future__ import annotations

import gc
import os
import random
import sys
import time
import unittest
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import te_conformance  # noqa: E402
import te_harness  # noqa: E402
import te_workers  # noqa: E402
from test_te_harness import Patched, loaded_te  # noqa: E402

ROOT = HERE.parent
# A non-reentrant checkpoint rebinds distributed.py's _USE_REENTRANT_ACTIVATION_RECOMPUTE (and,
# under upstream, leaves an entry in the FIFO when no backward pops it).
CHECKPOINT_WITHOUT_BACKWARD = "autocast on { checkpoint nonreentrant { linear L0 } }\n"


def corpus() -> list:
    """The catalogue, the edge scenarios and a few random programs."""
    texts = [p.read_text() for d in ("spec/catalogue", "tests/scenarios") for p in sorted((ROOT / d).glob("*.scn"))]
    return texts + [text for _, text in te_conformance.random_corpus(os.environ["EXPLORER"], 40, 7, 30)]


# ---- functions the workers run instead of te_harness.run_program (module-level: sent by name) --

def run_then_disable_grad(te, text):
    result = te_harness.run_program(te, text)
    torch.set_grad_enabled(False)
    return result


def run_then_leave_a_hook(te, text):
    result = te_harness.run_program(te, text)
    torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x).__enter__()
    return result


def set_a_class_attribute_and_fill_the_fifo(te, text):
    """Changes TE's class-level state as a program could: the reset must undo it."""
    seen = {"had_the_attribute": hasattr(te.manager, "left_by_a_program"),
            "fifo": list(getattr(te.distributed.activation_recompute_forward, "_is_first_fp8_module", []))}
    te.manager.left_by_a_program = True
    te.manager.quantization_state.autocast_depth = 7
    te.distributed._USE_REENTRANT_ACTIVATION_RECOMPUTE = "changed"
    te.distributed.a_new_global = 1
    fifo = getattr(te.distributed.activation_recompute_forward, "_is_first_fp8_module", None)
    if fifo is not None:
        fifo.append(True)
    return seen


def where_and_what(te, text):
    return {"pid": os.getpid(), "text": text}


def leak_and_count_tracked(te, text):
    """The objects the collector walks as the program starts, and those of the program's that
    outlive a collection."""
    before = len(gc.get_objects())
    te_harness.run_program(te, text)
    gc.collect()
    return {"walked_at_start": before, "outliving": len(gc.get_objects()) - before}


def hang(te, text):
    time.sleep(3600)


def die(te, text):
    os._exit(3)


class ResultsAsInAFreshProcess(unittest.TestCase):
    def test_reused_workers_give_what_a_fork_per_program_gives(self):
        te = loaded_te()
        texts = corpus()
        with te_workers.Workers(te, jobs=2, reuse=False) as fresh:
            expected = fresh.map(texts)
        shuffled = list(range(len(texts)))
        random.Random(1).shuffle(shuffled)
        with te_workers.Workers(te, jobs=2) as pool:
            forward = pool.map(texts)
            backward = pool.map(texts[::-1])[::-1]
            mixed = pool.map([texts[i] for i in shuffled])
        self.assertEqual(forward, expected)
        self.assertEqual(backward, expected)
        self.assertEqual([mixed[shuffled.index(i)] for i in range(len(texts))], expected)

    def test_results_come_in_submission_order_from_few_workers(self):
        te = loaded_te()
        texts = [f"linear L{i}\n" for i in range(30)]
        with te_workers.Workers(te, jobs=2) as pool:
            results = pool.map(texts, function=where_and_what)
        self.assertEqual([r["text"] for r in results], texts)
        self.assertLessEqual(len({r["pid"] for r in results}), 2)

    def test_what_a_program_leaks_is_not_walked_again(self):
        # A reentrant checkpoint in a graph saved and not freed: its run outlives collections
        # (a cycle through torch's autograd nodes). The worker freezes it after the program, so
        # the collections of the next programs do not walk it again and again. (The first
        # program also leaves the worker's own bookkeeping, the reset's lists, which the
        # second program's collection sees: the programs after those two are compared.)
        te = loaded_te()
        with te_workers.Workers(te, jobs=1) as pool:
            results = pool.map(["checkpoint reentrant { linear L0 }; save A\n"] * 8, function=leak_and_count_tracked)
        leaked = [r["outliving"] for r in results[2:]]
        self.assertGreater(min(leaked), 50, results)
        self.assertLess(results[-1]["walked_at_start"], min(leaked), results)

    def test_the_reset_undoes_what_a_program_changed(self):
        te = loaded_te()
        with te_workers.Workers(te, jobs=1) as pool:
            first, second = pool.map(["", ""], function=set_a_class_attribute_and_fill_the_fifo)
        self.assertEqual(first, second)
        self.assertFalse(second["had_the_attribute"])


class StateLeftBehindIsCaught(unittest.TestCase):
    def assertLeaves(self, pool, text, place, function=None):
        with self.assertRaises(te_workers.HarnessFailure) as caught:
            pool.map([text], function=function)
        self.assertIn("left state behind", str(caught.exception))
        self.assertIn(place, str(caught.exception))

    def test_a_te_function_that_stashes_in_its_closure(self):
        te = loaded_te()
        stash = []
        original = te.linear._check_fp8_reduce_and_update

        def stashing():
            stash.append("a claim")  # where no reset looks: a closure of a patched-in function
            return original()

        with Patched(te.linear, "_check_fp8_reduce_and_update", stashing), te_workers.Workers(te, jobs=1) as pool:
            self.assertLeaves(pool, "autocast on { linear L0 }\n",
                              "transformer_engine.pytorch.module.linear._check_fp8_reduce_and_update (closure stash)")

    def test_a_te_function_that_writes_a_tensor_it_holds(self):
        te = loaded_te()
        held = torch.zeros(1)
        original = te.linear._check_fp8_reduce_and_update

        def writing():
            held.add_(1)  # a tensor TE holds, written in place: no reset can undo it
            return original()

        with Patched(te.linear, "_check_fp8_reduce_and_update", writing), te_workers.Workers(te, jobs=1) as pool:
            self.assertLeaves(pool, "autocast on { linear L0 }\n", "(closure held): a tensor written in place")

    def test_a_reset_that_misses_a_global_is_caught_by_the_check(self):
        te = loaded_te()
        namespace = vars(te.distributed)
        restore = te_workers._Dicts.restore

        def restore_but_distributed(self, d, saved):
            return [] if d is namespace else restore(self, d, saved)

        with Patched(te_workers._Dicts, "restore", restore_but_distributed), \
                te_workers.Workers(te, jobs=1) as pool:
            self.assertLeaves(pool, CHECKPOINT_WITHOUT_BACKWARD,
                              "transformer_engine.pytorch.distributed: rebound ['_USE_REENTRANT_ACTIVATION_RECOMPUTE']")

    def test_a_reset_that_misses_a_container_is_caught_by_the_check(self):
        te = loaded_te()
        fifo = getattr(te.distributed.activation_recompute_forward, "_is_first_fp8_module", None)
        if fifo is None:
            self.skipTest("this TE keeps no FIFO (the PR #3213 head)")
        restore = te_workers._Sequences.restore

        def restore_but_the_fifo(self, obj, saved):
            return [] if obj is fifo else restore(self, obj, saved)

        with Patched(te_workers._Sequences, "restore", restore_but_the_fifo), te_workers.Workers(te, jobs=1) as pool:
            self.assertLeaves(pool, CHECKPOINT_WITHOUT_BACKWARD,
                              "transformer_engine.pytorch.distributed.activation_recompute_forward."
                              "_is_first_fp8_module: a list of 0 items, now 1")

    def test_torch_state_left_behind(self):
        te = loaded_te()
        with te_workers.Workers(te, jobs=1) as pool:
            self.assertLeaves(pool, "linear L0\n", "torch's grad mode", function=run_then_disable_grad)
            self.assertLeaves(pool, "linear L0\n", "torch's saved-tensor hooks", function=run_then_leave_a_hook)
            # Each leak replaced its worker: the next program runs on a clean one.
            self.assertEqual(len(pool.map(["linear L0\n"])), 1)

    def test_failures_can_be_returned_in_their_places(self):
        te = loaded_te()
        with te_workers.Workers(te, jobs=2) as pool:
            results = pool.map(["linear L0\n"] * 3, function=run_then_disable_grad, failures="return")
        self.assertTrue(all("harness_failure" in r for r in results))


class HangsAndDeaths(unittest.TestCase):
    def test_a_program_that_hangs_is_killed_and_reported(self):
        te = loaded_te()
        with te_workers.Workers(te, jobs=1, timeout=2) as pool:
            started = time.monotonic()
            with self.assertRaises(te_workers.HarnessFailure) as caught:
                pool.map(["linear L0\n"], function=hang)
            self.assertLess(time.monotonic() - started, 30)
            self.assertIn("timed out after 2 s", str(caught.exception))
            # The worker was replaced: the pool goes on.
            (result,) = pool.map(["autocast on { linear L0 }; backward\n"])
        self.assertEqual(result["steps"][0]["backward_updates"], 1)

    def test_a_worker_that_dies_is_reported(self):
        te = loaded_te()
        with te_workers.Workers(te, jobs=2) as pool:
            results = pool.map(["linear L0\n", "linear L0\n"], function=die, failures="return")
        self.assertIn("died", results[0]["harness_failure"])

    def test_shrinking_runs_with_the_timeout_too(self):
        te = loaded_te()
        text = (ROOT / "spec" / "catalogue" / "05-reentrant-single-3-layers.scn").read_text()
        original = te.linear._check_fp8_reduce_and_update

        def hanging_in_a_recompute():  # the disagreement's candidates hang
            if te.distributed.in_fp8_activation_recompute_phase():
                time.sleep(3600)
            return original()

        with Patched(te.linear, "_check_fp8_reduce_and_update", hanging_in_a_recompute), \
                te_conformance.Checker(te, os.environ["EXPLORER"], "upstream", jobs=2, timeout=2) as checker:
            with self.assertRaises(te_workers.HarnessFailure) as caught:
                te_conformance.shrink(checker, text)
        self.assertIn("timed out after 2 s", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
