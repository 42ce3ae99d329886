#include "explorer/search/search_state.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace fp8sm::explorer {

namespace {

const char kMagic[] = "fp8sm search snapshot, one rank";

void put_string(SnapshotWriter& out, const std::string& text) { out.put_bytes(Bytes(text.begin(), text.end())); }

std::string get_string(SnapshotReader& in) {
  const Bytes bytes = in.get_bytes(4096);
  return std::string(bytes.begin(), bytes.end());
}

void put_set(SnapshotWriter& out, const FingerprintSet& set) {
  out.put<std::uint64_t>(set.home_slots());
  out.put<std::uint64_t>(set.table_bytes().size());
  out.write(set.table_bytes().data(), set.table_bytes().size());
}

// A count of `unit`-byte items, refused when the file cannot hold that many (a corrupt count
// must not become a huge allocation before the checksum is read).
std::uint64_t get_count(SnapshotReader& in, std::size_t unit) {
  const auto n = in.get<std::uint64_t>();
  if (n > in.remaining() / unit) {
    throw SnapshotError(fmt::format("'{}' is truncated (or corrupt): it counts {} items of {} bytes where {} bytes remain",
                                    in.path(), n, unit, in.remaining()));
  }
  return n;
}

void get_set(SnapshotReader& in, FingerprintSet& set) {
  const auto homes = in.get<std::uint64_t>();
  TableBytes bytes(get_count(in, 1));
  in.read(bytes.data(), bytes.size());
  try {
    set.assign(homes, std::move(bytes));
  } catch (const std::invalid_argument&) {
    throw SnapshotError(fmt::format("'{}' is corrupt: a fingerprint table does not hold together", in.path()));
  }
}

}  // namespace

std::size_t RankState::stored_bytes() const {
  std::size_t bytes = seen.bytes() + frontier.bytes();
  for (const auto& [invariant, set] : violating) bytes += set.bytes();
  return bytes;
}

void save_rank_state(const RankState& state, const SnapshotIdentity& identity, int rank, SnapshotWriter& out) {
  put_string(out, kMagic);
  put_string(out, identity.version);
  out.put<std::uint64_t>(identity.model);
  put_string(out, identity.options);
  out.put<std::int32_t>(identity.ranks);
  out.put<std::int32_t>(rank);
  out.put<std::int32_t>(state.depth_done);
  out.put<std::uint64_t>(state.distinct);
  out.put<std::uint64_t>(state.transitions);
  out.put<std::uint64_t>(state.layers.size());
  for (const LayerStats& l : state.layers) {
    out.put<std::int32_t>(l.depth);
    out.put<std::uint64_t>(l.frontier);
    out.put<std::uint64_t>(l.distinct);
    out.put<std::uint64_t>(l.transitions);
  }
  out.put<std::uint64_t>(state.stored_before_last);
  out.put<std::uint64_t>(state.last_parents);
  out.put<double>(state.per_parent_before);
  put_set(out, state.seen);
  for (spec::Invariant i : spec::kAllInvariants) {
    const auto it = state.violating.find(i);
    out.put<std::uint8_t>(it == state.violating.end() ? 0 : 1);
    if (it != state.violating.end()) put_set(out, it->second);
  }
  out.put<std::uint64_t>(state.frontier.size());
  for (std::size_t i = 0; i < state.frontier.size(); ++i) out.put(state.frontier[i]);
  out.put_bytes(state.finds.serialize());
  out.put<std::uint64_t>(state.row_transitions.size());
  out.write(state.row_transitions.data(), state.row_transitions.size() * sizeof(std::uint64_t));
}

void load_rank_state(RankState& state, const SnapshotIdentity& identity, int rank, int layer, SnapshotReader& in) {
  const auto corrupt = [&](const std::string& why) {
    return SnapshotError(fmt::format("'{}' is corrupt: {}", in.path(), why));
  };
  if (get_string(in) != kMagic) throw SnapshotError(fmt::format("'{}' is not a rank's snapshot file", in.path()));
  SnapshotIdentity found;
  found.version = get_string(in);
  found.model = in.get<std::uint64_t>();
  found.options = get_string(in);
  found.ranks = in.get<std::int32_t>();
  check_identity(found, identity, fmt::format("'{}'", in.path()));
  if (in.get<std::int32_t>() != rank) throw corrupt(fmt::format("it is not rank {}'s file", rank));
  state.depth_done = in.get<std::int32_t>();
  if (state.depth_done != layer) throw corrupt(fmt::format("it holds layer {}, the manifest names {}", state.depth_done, layer));
  state.distinct = in.get<std::uint64_t>();
  state.transitions = in.get<std::uint64_t>();
  state.layers.resize(get_count(in, 28));
  for (LayerStats& l : state.layers) {
    l.depth = in.get<std::int32_t>();
    l.frontier = in.get<std::uint64_t>();
    l.distinct = in.get<std::uint64_t>();
    l.transitions = in.get<std::uint64_t>();
  }
  if (state.layers.size() != static_cast<std::size_t>(layer) + 1) throw corrupt("its layer table has the wrong length");
  state.stored_before_last = in.get<std::uint64_t>();
  state.last_parents = in.get<std::uint64_t>();
  state.per_parent_before = in.get<double>();
  get_set(in, state.seen);
  state.violating.clear();
  for (spec::Invariant i : spec::kAllInvariants) {
    if (in.get<std::uint8_t>() != 0) get_set(in, state.violating[i]);
  }
  state.frontier.clear();
  const std::uint64_t entries = get_count(in, sizeof(FrontierEntry));
  for (std::uint64_t e = 0; e < entries; ++e) state.frontier.push_back(in.get<FrontierEntry>());
  const Bytes finds = in.get_bytes(in.remaining());
  FirstFinds loaded(state.finds.rows());
  try {
    loaded.merge(finds);
  } catch (const std::runtime_error& e) {
    throw corrupt(e.what());
  }
  state.finds = loaded;
  const std::uint64_t rows = get_count(in, sizeof(std::uint64_t));
  if (rows != state.row_transitions.size()) throw corrupt("its row counts are for another table");
  in.read(state.row_transitions.data(), rows * sizeof(std::uint64_t));
}

}  // namespace fp8sm::explorer
