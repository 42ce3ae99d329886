// The rows of the transition table that no scenario of the language can take, each with the
// reason: test_table_coverage checks that no catalogue or corpus scenario takes them, and
// test_search_coverage that the exhaustive search never fires them.
#pragma once

#include <map>
#include <string>

namespace fp8sm::test_support {

// Row (as `explorer table` prints it) -> why no scenario can take it.
inline const std::map<std::string, std::string>& documented_unreachable() {
  static const std::map<std::string, std::string> rows = {
      {"OwnershipAvailable + CheckpointForwardExit [And_<And_<Pr3213OrFp8sm, Exceptional>, Not_<BitBeforeFrame>>] "
       "-> OwnershipConsumed / InvalidateCapture",
       "pr3213 (and fp8sm) never leaves F above its entry value inside a checkpoint forward: the scopes that raise "
       "F (a depth-0 autocast, a recompute) restore it at their own exits, which unwinding runs first"},
      {"InRecompute + RecomputeExit [And_<Pr3213OrFp8sm, FramePrevOriginal>] -> InOriginalForward / PopCheckpointFrame",
       "pr3213 and fp8sm enter a recompute only from a backward pass (recompute_uncaptured is refused), and the "
       "language allows backward only outside checkpoint blocks"},
      {"InRecompute + RecomputeExit [And_<Pr3213OrFp8sm, FramePrevRecompute>] -> (stays) / PopCheckpointFrame",
       "pr3213 and fp8sm recomputes nest only through a reentrant sub-backward, which runs after the parent "
       "recompute has exited"},
      {"GradEnabled + GradPush [EnablesGrad] -> (stays) / PushGrad",
       "grad is enabled only by a recompute, which runs inside a backward pass where grad is off"},
      {"GradEnabled + GradPop [GradBeforeWasOn] -> (stays) / PopGrad",
       "pops the push of the row above, which cannot happen"},
  };
  return rows;
}

}  // namespace fp8sm::test_support
