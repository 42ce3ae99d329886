// A rank's snapshots: the directory made ready, each completed layer written (this rank's file,
// then rank 0's manifest), a snapshot read back to resume.
#include <fmt/core.h>

#include <new>

#include "explorer/search/rank_search.hpp"
#include "explorer/search/test_faults.hpp"

namespace fp8sm::explorer {

namespace {

// Runs `body` on every rank and agrees on how it went: if it threw on any rank, it throws on
// every rank (a rank alone rethrows its own exception; several throw a RankFailure naming the
// lowest rank that failed, with its message), so no rank is left waiting in a collective.
template <class Body>
void agreed(Ranks& ranks, Body&& body) {
  if (ranks.size() == 1) {
    body();
    return;
  }
  std::string error;
  try {
    body();
  } catch (const std::bad_alloc&) {
    error = "out of memory (--max-memory stops a search cleanly)";
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "an exception";
  } catch (...) {
    error = "an unknown exception";
  }
  if (ranks.max(error.empty() ? 0 : 1) == 0) return;
  const std::vector<Bytes> errors = ranks.all_gather(Bytes(error.begin(), error.end()));
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) {
      throw RankFailure(fmt::format("rank {} of {}: {}", r, ranks.size(), std::string(errors[r].begin(), errors[r].end())));
    }
  }
}

}  // namespace

void RankSearch::open_snapshot_dir() {
  identity_ = snapshot_identity(options_, model_, ranks_.size());
  agreed(ranks_, [&] {
    prepare_snapshot_dir(options_.snapshot_dir, !options_.resume);
    if (!options_.resume && me() == 0) {
      if (const auto manifest = read_manifest(options_.snapshot_dir)) {
        throw SnapshotError(fmt::format(
            "'{}' already holds a snapshot (of layer {}): resume it with --resume, or give an empty directory",
            options_.snapshot_dir, manifest->layer));
      }
    }
  });
}

// Every rank's file of the layer just completed, then the manifest naming it (rank 0), then
// the files of the layer before are removed.
void RankSearch::save_snapshot() {
  const int layer = state_.depth_done;
  const std::size_t ranks = static_cast<std::size_t>(ranks_.size());
  std::vector<std::uint64_t> checksums(ranks, 0);
  agreed(ranks_, [&] {
    SnapshotWriter out(rank_file(options_.snapshot_dir, layer, me(), ranks_.size()));
    save_rank_state(state_, identity_, me(), out);
    checksums[static_cast<std::size_t>(me())] = out.commit();
  });
  test_fault("rank-file-written", layer, me());
  ranks_.all_reduce(checksums.data(), ranks, Ranks::Reduce::Sum);  // each rank gave its own, zeros elsewhere
  agreed(ranks_, [&] {
    if (me() == 0) write_manifest(options_.snapshot_dir, Manifest{identity_, layer, checksums});
  });
  test_fault("manifest-written", layer, me());
  // The files of earlier layers (also those a killed run may have left behind).
  for (int earlier = 0; earlier < layer; ++earlier) remove_file(rank_file(options_.snapshot_dir, earlier, me(), ranks_.size()));
}

void RankSearch::resume() {
  int layer = 0;
  agreed(ranks_, [&] {
    const auto manifest = read_manifest(options_.snapshot_dir);
    if (!manifest) {
      throw SnapshotError(fmt::format("'{}' holds no snapshot to resume (no manifest)", options_.snapshot_dir));
    }
    check_identity(manifest->identity, identity_, fmt::format("the snapshot in '{}'", options_.snapshot_dir));
    layer = manifest->layer;
    SnapshotReader in(rank_file(options_.snapshot_dir, layer, me(), ranks_.size()));
    load_rank_state(state_, identity_, me(), layer, in);
    if (in.finish() != manifest->checksums[static_cast<std::size_t>(me())]) {
      throw SnapshotError(fmt::format("'{}' is not the file the manifest of '{}' names (their checksums differ)",
                                      in.path(), options_.snapshot_dir));
    }
  });
  result_.resumed_from_layer = layer;
}
}  // namespace fp8sm::explorer
