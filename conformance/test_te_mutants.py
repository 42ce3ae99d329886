"""The mutant fixture still fits the TE it was written for, and a mutated tree is what the
harness then runs.

Run by `scripts/te-conformance.sh --self-test`. The fixture names TE 2.20.2's code by tokens;
when a new wheel moves or renames them, these tests say which mutant drifted, before a mutation
score is computed on edits that no longer exist.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import te_mutants  # noqa: E402
from te_mutants import Mutant, MutantError  # noqa: E402

PINNED = te_mutants.DEFAULT_TE_SOURCE  # the wheel the fixture was written for


def pinned_tree() -> Path:
    if not (PINNED / "transformer_engine" / "pytorch" / "quantization.py").is_file():
        raise unittest.SkipTest(f"TE {te_mutants.TE_VERSION} is not unpacked under build/ "
                                "(scripts/te-conformance.sh installs it)")
    return PINNED


def toy(token: str, replacement: str, scope: str = "Outer.method") -> Mutant:
    return Mutant(id="toy", file="transformer_engine/toy.py", scope=scope, token=token,
                  replacement=replacement, what="a test edit")


TOY = textwrap.dedent('''\
    def helper(queue):
        """pop(0) in a docstring is not code."""
        return queue.pop(0)  # nor is pop(0) in a comment


    class Outer:
        def method(self, queue):
            total = 0
            total += 1
            return queue.pop(0) + total
    ''')


class FixtureAppliesToItsTE(unittest.TestCase):
    def test_every_mutant_applies_once_and_compiles(self):
        tree = pinned_tree()
        mutants = te_mutants.load_mutants()
        for m in mutants:
            with self.subTest(mutant=m.id):
                text = (tree / m.file).read_text()
                number, before, after = te_mutants.edited_line(m, text)
                self.assertIn(m.replacement, after)
                self.assertEqual(len(text.splitlines()), len(te_mutants.apply_to_source(m, text).splitlines()))

    def test_the_fixture_is_well_formed(self):
        mutants = te_mutants.load_mutants()
        self.assertGreaterEqual(len(mutants), 35)
        for m in mutants:
            with self.subTest(mutant=m.id):
                self.assertTrue(m.what)
                if m.equivalent is None:
                    self.assertTrue(m.shows, "a mutant that can show says how")


class DriftIsReported(unittest.TestCase):
    def test_a_token_not_in_its_scope(self):
        with self.assertRaisesRegex(MutantError, "occurs 0 times.*drifted"):
            te_mutants.apply_to_source(toy("pop(1)", "pop()"), TOY)

    def test_a_token_twice_in_its_scope(self):
        with self.assertRaisesRegex(MutantError, "occurs 2 times"):
            te_mutants.apply_to_source(toy("queue", "items"), TOY)

    def test_a_scope_that_is_gone(self):
        with self.assertRaisesRegex(MutantError, "names no def or class"):
            te_mutants.apply_to_source(toy("pop(0)", "pop()", scope="Outer.gone"), TOY)

    def test_an_edit_that_does_not_compile(self):
        with self.assertRaisesRegex(MutantError, "no longer compiles"):
            te_mutants.apply_to_source(toy("+= 1", "+= ("), TOY)

    def test_comments_docstrings_and_longer_names_are_not_occurrences(self):
        edited = te_mutants.apply_to_source(toy("pop(0)", "pop()", scope="helper"), TOY)
        self.assertIn("return queue.pop()  # nor is pop(0) in a comment", edited)
        self.assertIn('"""pop(0) in a docstring is not code."""', edited)
        # `total` inside `subtotal` would not count either: only whole names are tokens.
        self.assertEqual(te_mutants._occurrences("subtotal total", "total", 0, 14), [9])


class MutatedTree(unittest.TestCase):
    def test_one_real_edited_file_and_links_for_the_rest(self):
        tree = pinned_tree()
        m = te_mutants.mutant("fifo-pop-end")
        with te_mutants.mutated_tree(m, tree) as mutated:
            edited = mutated / m.file
            self.assertFalse(edited.is_symlink())
            self.assertNotEqual(edited.read_text(), (tree / m.file).read_text())
            self.assertTrue((mutated / "transformer_engine" / "pytorch" / "quantization.py").is_symlink())
            self.assertTrue((mutated / "transformer_engine" / "common").is_symlink())
        self.assertFalse(mutated.exists())
        self.assertEqual(te_mutants.apply_to_source(m, (tree / m.file).read_text()).count(m.token) + 1,
                         (tree / m.file).read_text().count(m.token), "the original stays as it was")

    def test_the_harness_runs_the_mutant(self):
        """The seed's reentrant three-layer row changes under the claim without its re-arm, as
        test_te_harness shows with a patch: the harness loads the edited file, not the original."""
        tree = pinned_tree()
        with te_mutants.mutated_tree(te_mutants.mutant("rearm-dropped"), tree) as mutated:
            program = (HERE.parent / "spec" / "catalogue" / "05-reentrant-single-3-layers.scn").read_text()
            code = textwrap.dedent(f'''\
                import sys
                sys.path.insert(0, {str(HERE)!r})
                import te_conformance
                te = te_conformance.load_te(__import__("pathlib").Path({str(mutated)!r}))
                (step,) = te_conformance.run_on_te(te, {program!r})["steps"]
                print(step["forward_updates"], step["backward_updates"])
                ''')
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertEqual(done.stdout.split(), ["2", "1"])  # TE as it is: 2/3 (seed row 5)

    def test_build_tree_refuses_a_tree_without_the_file(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaisesRegex(MutantError, "does not exist"):
                te_mutants.build_tree(te_mutants.mutant("fifo-pop-end"), Path(empty), Path(empty) / "out")


if __name__ == "__main__":
    unittest.main()
