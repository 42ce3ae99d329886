"""The harness's own tests: it reproduces TE's published numbers, and it notices when a piece
of what it runs is wrong.

Run by `scripts/te-conformance.sh --self-test` (TE_SOURCE: the TE tree, EXPLORER: the binary).
The expected counts are the seed's measurements on a GPU (the PR #3213 discussion, docs/seed
rows 1-7), not outputs of this harness.
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import te_conformance  # noqa: E402
import te_stubs  # noqa: E402

CATALOGUE = HERE.parent / "spec" / "catalogue"

# Seed rows (forward, backward updates of one step) as measured on TE main with a GPU.
SEED = {
    "01-no-checkpoint.scn": (1, 1),
    "02-nonreentrant-single.scn": (2, 1),
    "03-nonreentrant-per-layer.scn": (4, 1),
    "04-reentrant-single-1-layer.scn": (2, 1),
    "05-reentrant-single-3-layers.scn": (2, 3),
    "06-reentrant-per-layer.scn": (4, 3),
    "07-nested-reentrant.scn": (3, 2),
}

_te = None


def loaded_te():
    global _te
    if _te is None:
        _te = te_conformance.load_te(Path(os.environ["TE_SOURCE"]))
    return _te


def seed_counts(te) -> dict:
    counts = {}
    for name in SEED:
        result = te_conformance.run_on_te(te, (CATALOGUE / name).read_text())
        (step,) = result["steps"]
        counts[name] = (step["forward_updates"], step["backward_updates"])
    return counts


def claim_without_re_arm(te):
    """TE's claim (_check_fp8_reduce_and_update) with its recompute-phase re-arm left out."""
    return lambda: te.manager.is_first_fp8_module()


class Patched:
    """Replaces one attribute for the programs run inside the block (the workers forked there
    inherit it)."""

    def __init__(self, owner, name, value):
        self.owner, self.name, self.value = owner, name, value

    def __enter__(self):
        self.saved = getattr(self.owner, self.name)
        setattr(self.owner, self.name, self.value)

    def __exit__(self, *exc):
        setattr(self.owner, self.name, self.saved)


class SeedRows(unittest.TestCase):
    def test_te_gives_the_seed_counts(self):
        self.assertEqual(seed_counts(loaded_te()), SEED)


class BrokenPiecesAreSeen(unittest.TestCase):
    """Each test breaks one thing the harness relies on and checks that the seed rows, or the
    comparison with the model, say so."""

    def test_a_claim_without_the_re_arm_flips_the_reentrant_rows(self):
        te = loaded_te()
        with Patched(te.linear, "_check_fp8_reduce_and_update", claim_without_re_arm(te)):
            broken = seed_counts(te)
        # The re-arm is what makes every recomputed layer of a reentrant checkpoint an owner:
        # row 5 (3 layers) loses its extra backward updates; the rows with one layer a
        # recompute, or none recomputed with grad, keep their counts.
        row5 = "05-reentrant-single-3-layers.scn"
        self.assertNotEqual(broken[row5], SEED[row5])
        self.assertEqual({k: v for k, v in broken.items() if k != row5}, {k: v for k, v in SEED.items() if k != row5})

    def test_the_comparison_reports_a_minimal_disagreement(self):
        te = loaded_te()
        text = (CATALOGUE / "05-reentrant-single-3-layers.scn").read_text()
        with te_conformance.Checker(te, os.environ["EXPLORER"], "upstream") as checker:
            self.assertFalse(checker.disagrees(text))
        # The checker's workers are forked at its first use: this one's after the patch.
        with Patched(te.linear, "_check_fp8_reduce_and_update", claim_without_re_arm(te)), \
                te_conformance.Checker(te, os.environ["EXPLORER"], "upstream") as checker:
            self.assertTrue(checker.disagrees(text))
            minimal = te_conformance.shrink(checker, text)
            self.assertTrue(checker.disagrees(minimal))
        statements = [line for line in minimal.splitlines() if line.strip() not in ("", "}")]
        original = [line for line in text.splitlines() if line.strip() and not line.strip().startswith(("#", "}"))]
        self.assertLess(len(statements), len(original))

    def test_a_recompute_that_saves_nothing_changes_the_non_reentrant_rows(self):
        te = loaded_te()
        saving_nothing = lambda *args: (None, None, None, None)  # noqa: E731
        with Patched(te.linear, "_linear_setup_ctx", saving_nothing):
            broken = seed_counts(te)
        # With nothing saved, no unpack triggers a non-reentrant recompute (seed rows 2 and 3).
        self.assertNotEqual(broken["02-nonreentrant-single.scn"], SEED["02-nonreentrant-single.scn"])
        self.assertNotEqual(broken["03-nonreentrant-per-layer.scn"], SEED["03-nonreentrant-per-layer.scn"])

    def test_a_restore_that_pairs_the_saved_tensors_wrongly_is_the_programs_exception(self):
        te = loaded_te()

        def swapped(bwd_args, ctx):  # TE's unpack with the input's and the weight's slots swapped
            (bwd_args.saved_weight, bwd_args.weight_fp8, bwd_args.inputmat,
             bwd_args.bias) = te.linear.restore_from_func_ctx(ctx)

        text = (CATALOGUE / "01-no-checkpoint.scn").read_text()
        with Patched(te.linear.LinearBwdArgs, "setup_saved_tensors", swapped):
            (step,) = te_conformance.run_on_te(te, text)["steps"]
        self.assertEqual([r["kind"] for r in step["raised"]], ["RuntimeError"])
        self.assertIn("shape (4, 4), not (2, 4)", step["raised"][0]["message"])

    def test_a_stub_that_raises_stops_the_run(self):
        def failing(bwd_args):
            raise ValueError("a bug in the stub")

        te = loaded_te()
        with Patched(te_stubs, "_linear_backward_impl", failing):
            with self.assertRaises(te_conformance.HarnessFailure) as caught:
                te_conformance.run_on_te(te, (CATALOGUE / "01-no-checkpoint.scn").read_text())
        self.assertIn("StubFailed: the stub _linear_backward", str(caught.exception))
        self.assertIn("ValueError: a bug in the stub", str(caught.exception))

    def test_a_missing_stub_stops_the_run(self):
        te = loaded_te()
        with Patched(sys.modules["transformer_engine_torch"], "fused_amax_and_scale_update_after_reduction",
                     te_stubs._Opaque("transformer_engine_torch.fused_amax_and_scale_update_after_reduction")):
            with self.assertRaises(te_conformance.HarnessFailure):
                te_conformance.run_on_te(te, (CATALOGUE / "01-no-checkpoint.scn").read_text())


class Report(unittest.TestCase):
    def test_each_agreement_figure_has_the_share_that_made_a_backward_update(self):
        # main() loads TE itself: run it in a child, as the script does.
        files = [str(CATALOGUE / name) for name in ("01-no-checkpoint.scn", "20-nonreentrant-forward-exception.scn")]
        command = [sys.executable, str(HERE / "te_conformance.py"), "--te-source", os.environ["TE_SOURCE"],
                   "--explorer", os.environ["EXPLORER"], "--jobs", "1"]
        done = subprocess.run(command + [arg for f in files for arg in ("--scenario", f)],
                              capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("given: 2/2 agree, 50 % made a backward update on TE\n", done.stdout)
        self.assertRegex(done.stdout, r"all: 2/2 agree, 50 % made a backward update on TE \(\d+ s\)")


class Layouts(unittest.TestCase):
    def test_a_brace_on_the_line_after_its_header_agrees_with_the_model(self):
        text = ("autocast on\n{\n  try\n\n  # the body\n  {\n    linear L0\n    no_grad\n    { linear L1 }\n  }\n}\n"
                "backward\n")
        with te_conformance.Checker(loaded_te(), os.environ["EXPLORER"], "upstream") as checker:
            te_result, model_result = checker.results(text)
        self.assertEqual(te_conformance.comparable(te_result), te_conformance.comparable(model_result))
        self.assertEqual(te_conformance.comparable(te_result), [(1, 1, ())])


if __name__ == "__main__":
    unittest.main()
