"""The harness's reader of the scenario language against docs/scenarios.md ("Blocks and
separators"), on what the explorer's parser (spec/scenario_parser.cpp) accepts. No TE needed."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scenario  # noqa: E402

SAME_LINE = """\
autocast on {
  checkpoint nonreentrant { linear L0 }
  try {
    no_grad { linear L1 }
  }
}
backward
"""

# The '{' of each block on a later line than its header, after blank and comment lines.
LATER_LINE = """\
autocast on
{
  checkpoint nonreentrant
  { linear L0 }
  try

  # a comment between the header and its brace
  {
    no_grad
    {
      linear L1
    }
  }
}
backward
"""


class Braces(unittest.TestCase):
    def test_a_brace_may_stand_on_a_later_line_than_its_header(self):
        self.assertEqual(scenario.parse(LATER_LINE), scenario.parse(SAME_LINE))

    def test_nothing_else_may_stand_between_a_header_and_its_brace(self):
        for text in ("autocast on;\n{ linear L0 }\n", "autocast on\nlinear L0\n{ }\n", "autocast on\n"):
            with self.assertRaises(scenario.ScenarioError, msg=text):
                scenario.parse(text)

    def test_a_header_is_not_split_across_lines(self):
        with self.assertRaises(scenario.ScenarioError):
            scenario.parse("autocast\non { linear L0 }\n")


if __name__ == "__main__":
    unittest.main()
