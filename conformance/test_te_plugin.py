"""fp8sm's TE plugin (docs/te-plugin.md) on TE's own code: it refuses what it does not know,
puts TE back as it found it, and every FP8 state decision it routes is the machine's.

Run by `scripts/te-conformance.sh --self-test`, which pip-installs the package fp8sm first.
The expected counts are the seed's (the PR #3213 discussion: TE main's measurements on a GPU,
and "the expected update count is forward=1, backward=1"), not outputs of the plugin.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import te_harness  # noqa: E402
import te_observe  # noqa: E402
from test_te_harness import CATALOGUE, SEED, loaded_te  # noqa: E402

import fp8sm  # noqa: E402
import fp8sm.te  # noqa: E402


def seed_counts_in_process(te) -> dict:
    counts = {}
    for name in SEED:
        (step,) = te_harness.run_program(te, (CATALOGUE / name).read_text())["steps"]
        counts[name] = (step["forward_updates"], step["backward_updates"])
    return counts


class Installed:
    """fp8sm.te.install for a `with` block; uninstalled after it whatever happens."""

    def __init__(self, semantics: str):
        self.semantics = semantics

    def __enter__(self):
        return fp8sm.te.install(self.semantics)

    def __exit__(self, *exc):
        fp8sm.te.uninstall()


class PluginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.te = loaded_te()

    def tearDown(self):
        self.assertIsNone(fp8sm.te.active(), "a test left the plugin installed")

    def test_the_seed_configurations_give_one_forward_and_one_backward_update_under_fp8sm(self):
        with Installed("fp8sm"):
            counts = seed_counts_in_process(self.te)
        self.assertEqual(counts, {name: (1, 1) for name in SEED})

    def test_under_upstream_the_seed_configurations_give_te_mains_counts(self):
        with Installed("upstream"):
            counts = seed_counts_in_process(self.te)
        self.assertEqual(counts, SEED)

    def test_the_decisions_are_the_machines(self):
        # The same installed wrappers, the machine swapped for one of another semantics: the
        # counts follow the machine. A wrapper that decided anything itself would not change.
        with Installed("upstream") as plugin:
            plugin.semantics = "fp8sm"
            counts = seed_counts_in_process(self.te)  # each program resets to a fp8sm machine
        self.assertEqual(counts, {name: (1, 1) for name in SEED})

    def test_uninstall_puts_every_entry_point_back(self):
        te = self.te
        owners = [(te.manager, n) for n in ("autocast_enter", "autocast_exit", "add_fp8_tensors_to_global_buffer",
                                           "copy_forward_fp8_meta_tensors_for_recompute",
                                           "get_old_fp8_meta_tensors_for_recompute", "restore_fp8_meta_tensors")]
        owners += [(te.distributed, n) for n in ("activation_recompute_forward", "get_activation_recompute_contexts",
                                                "checkpoint")]
        owners += [(te.distributed._CheckpointFunction, "forward"), (te.distributed._CheckpointFunction, "backward"),
                   (te.base, "in_fp8_activation_recompute_phase"),
                   (te.base.TransformerEngineBaseModule, "prepare_forward"),
                   (te.base.TransformerEngineBaseModule, "end_forward"),
                   (te.linear, "_check_fp8_reduce_and_update"), (te.linear._Linear, "forward"),
                   (te.linear._Linear, "backward")]
        import torch
        owners += [(torch.autograd.grad_mode.no_grad, "__enter__"), (torch.autograd.grad_mode.enable_grad, "__exit__")]

        def current():
            return [owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name) for owner, name in owners]

        before = current()
        with Installed("fp8sm"):
            during = current()
        self.assertEqual([a is b for a, b in zip(before, during)], [False] * len(owners))
        self.assertEqual([a is b for a, b in zip(before, current())], [True] * len(owners))

    def test_refusals(self):
        with self.assertRaisesRegex(fp8sm.te.UnsupportedVersion,
                                    r"^fp8sm\.te: Transformer Engine 2\.21\.0 is not supported; the plugin knows 2\.20\.x$"):
            fp8sm.te.install("fp8sm", te_version="2.21.0")
        self.assertIsNone(fp8sm.te.active())
        with self.assertRaisesRegex(ValueError, "unknown semantics"):
            fp8sm.te.install("main")
        with Installed("fp8sm"):
            with self.assertRaisesRegex(RuntimeError, "already installed"):
                fp8sm.te.install("fp8sm")
        with self.assertRaisesRegex(RuntimeError, "not installed"):
            fp8sm.te.reset()

    def test_a_module_the_plugin_does_not_route_is_refused_by_name(self):
        import torch
        from te_loader import cuda_reported_available

        class Other(self.te.base.TransformerEngineBaseModule):  # claims and updates in code of its own
            def forward(self, x):
                return x

        with cuda_reported_available():
            other = Other()
        with Installed("fp8sm"):
            with self.assertRaisesRegex(NotImplementedError, "^fp8sm.te: Other is not routed through the table"):
                other.prepare_forward(torch.zeros(2, 2))

    def test_an_exception_inside_a_checkpoint_leaves_the_state_the_table_leaves(self):
        # The catalogue's forward-exception rows, judged on TE with the plugin under fp8sm:
        # the steps' counts are the model's, and TE's globals are clean after each program.
        for name in ("19-reentrant-forward-exception.scn", "20-nonreentrant-forward-exception.scn",
                     "21-recompute-body-exception.scn", "22-recompute-entry-failure.scn"):
            text = (CATALOGUE / name).read_text()
            model = [(s["forward_updates"], s["backward_updates"]) for s in fp8sm.run(text, "fp8sm")["steps"]]
            with Installed("fp8sm") as plugin:
                te_steps = [(s["forward_updates"], s["backward_updates"])
                            for s in te_harness.run_program(self.te, text)["steps"]]
                self.assertEqual(plugin.machine.autocast_depth, 0, name)
                self.assertEqual(plugin.machine.checkpoint_phase, "outside", name)
                q = self.te.manager.quantization_state
                self.assertEqual((q.autocast_depth, q.is_first_fp8_module), (0, False), name)
            self.assertEqual(te_steps, model, name)

    def test_a_tape_whose_pass_failed_recomputes_with_the_original_scaling(self):
        # torch frees a node's saved tensors only once its backward returns: the saved tape
        # keeps the checkpoint node whose recompute raised, and the second pass recomputes it
        # after the autocast's exit updated the scaling. Judged on TE's own scaling tensors
        # (te_observe's I5), that recompute sees its original forward's scaling, and the model
        # says the same: no violation, the same counts and exceptions.
        text = (ROOT / "tests" / "scenarios" / "edge-tape-recomputes-again-after-a-failed-pass.scn").read_text()
        with Installed("fp8sm"):
            observed = te_observe.run_observed(self.te, text)["steps"]
        model = fp8sm.run(text, "fp8sm")["steps"]
        self.assertEqual([step["violations"] for step in observed], [{}])
        self.assertEqual([step.get("violations", []) for step in model], [[]])
        self.assertEqual([(s["forward_updates"], s["backward_updates"], [r["kind"] for r in s["raised"]]) for s in observed],
                         [(s["forward_updates"], s["backward_updates"], [r["kind"] for r in s["raised"]]) for s in model])


if __name__ == "__main__":
    unittest.main()
