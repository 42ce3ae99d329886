// Faults on purpose, for the tests of what the search does when a rank dies or fails
// (tests/explorer/test_snapshots.cpp, tests/mpi/): when the environment variable FP8SM_TEST_FAULT is
// "ACTION POINT LAYER [RANK]" and this rank (any rank, without RANK) reaches POINT of layer
// LAYER, it does ACTION there:
//
//   kill       SIGKILL to itself, as a crash, the kernel's OOM killer or `kill -9` would
//   throw      a std::runtime_error, as a program past the flat state's capacity would
//   interrupt  SIGINT to itself, as Ctrl-C would (once: a second SIGINT would end the process)
//   stop       SIGSTOP to itself (once), so that a test can signal it at a known point of the
//              search and let it go on with SIGCONT
//
// The points: `expansion` (expanding the layer's parents, several ranks only),
// `rank-file-written` (its snapshot file of the layer is in place, the manifest not yet),
// `manifest-written` (the snapshot of the layer is complete), `programs-listed` (--programs:
// the layer's programs are handed to the caller).
//
// One more, of another shape: "refuse thread-start N" makes starting worker thread N of a
// layer's expansion (threads are numbered from 1, the calling thread, so N is 2 or more) fail
// as it does at the system's limit on threads or memory: std::system_error, EAGAIN.
#pragma once

#include <cstddef>

namespace fp8sm::explorer {

void test_fault(const char* point, int layer, int rank);

// Throws the std::system_error of "refuse thread-start N" when `thread` is N.
void test_thread_start_fault(std::size_t thread);

}  // namespace fp8sm::explorer
