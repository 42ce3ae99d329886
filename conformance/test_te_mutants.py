"""The mutant fixture still fits the TE it was written for, and a mutated tree is what the
harness then runs.

Run by `scripts/te-conformance.sh --self-test`. The fixture names TE 2.20.2's code by tokens;
when a new wheel moves or renames them, these tests say which mutant drifted, before a mutation
score is computed on edits that no longer exist.
"""

from __future__ import annotations

import io
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenario  # noqa: E402
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
                if m.witness is not None:
                    scenario.parse(m.witness)  # the harness's reader


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

    def test_a_witness_shows_on_its_mutant(self):
        """The harness loads the edited file, not the original: the re-arm that sets the bit
        instead of restoring it gives one more backward update on its witness (which today's
        corpora lack), and TE as it is does not."""
        pinned_tree()
        out = io.StringIO()
        self.assertEqual(te_mutants.check_witnesses([te_mutants.mutant("rearm-sets-true")], out=out), [],
                         out.getvalue())
        self.assertIn("TE 2/1, mutant 2/2", out.getvalue())

    def test_build_tree_refuses_a_tree_without_the_file(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaisesRegex(MutantError, "does not exist"):
                te_mutants.build_tree(te_mutants.mutant("fifo-pop-end"), Path(empty), Path(empty) / "out")


if __name__ == "__main__":
    unittest.main()
