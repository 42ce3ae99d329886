#include "explorer/search_tree.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "spec/format.hpp"

namespace fp8sm::explorer {

namespace {
constexpr unsigned kLinearBase = 64;
constexpr unsigned kSaveBase = 128;
constexpr unsigned kBackwardBase = 160;

[[noreturn]] void does_not_fit(const spec::Statement& s) {
  throw std::invalid_argument(fmt::format("statement '{}' does not fit the search tree's one-byte code", s));
}
}  // namespace

std::uint8_t pack_statement(const spec::Statement& s) {
  switch (s.op) {
    case spec::Op::Linear:
      if (s.name >= kMaxPackedModules) does_not_fit(s);
      return static_cast<std::uint8_t>(kLinearBase + s.name);
    case spec::Op::Save:
      if (s.name >= kMaxPackedTapes) does_not_fit(s);
      return static_cast<std::uint8_t>(kSaveBase + s.name);
    case spec::Op::Backward: {
      const unsigned tape = s.name == spec::kCurrentGraph ? 0u : s.name + 1u;
      const unsigned code = kBackwardBase + tape * 2u + (s.retain ? 1u : 0u);
      if (code > 255u) does_not_fit(s);
      return static_cast<std::uint8_t>(code);
    }
    default:
      if (s.name != 0 || s.retain || static_cast<unsigned>(s.op) >= 16u) does_not_fit(s);
      return static_cast<std::uint8_t>(s.op);
  }
}

spec::Statement unpack_statement(std::uint8_t packed) {
  spec::Statement s;
  if (packed >= kBackwardBase) {
    const unsigned tape = (packed - kBackwardBase) / 2u;
    s.op = spec::Op::Backward;
    s.retain = (packed & 1u) != 0;
    s.name = tape == 0 ? spec::kCurrentGraph : static_cast<std::uint16_t>(tape - 1u);
  } else if (packed >= kSaveBase) {
    s.op = spec::Op::Save;
    s.name = static_cast<std::uint16_t>(packed - kSaveBase);
  } else if (packed >= kLinearBase) {
    s.op = spec::Op::Linear;
    s.name = static_cast<std::uint16_t>(packed - kLinearBase);
  } else {
    s.op = static_cast<spec::Op>(packed);
  }
  return s;
}

SearchTree::SearchTree() { add(kNoParent, spec::Statement{}); }

std::uint32_t SearchTree::add(std::uint32_t parent, const spec::Statement& via) {
  return add_packed(parent, pack_statement(via));
}

std::uint32_t SearchTree::add_packed(std::uint32_t parent, std::uint8_t via) {
  if (size_ >= kNoParent) throw std::length_error("the search tree holds at most 2^32 - 1 states");
  if (full()) chunks_.emplace_back();
  const auto index = static_cast<std::uint32_t>(size_);
  Chunk& c = chunks_.back();
  c.parents[index % kChunk] = parent;
  c.vias[index % kChunk] = via;
  ++size_;
  return index;
}

SearchTree::View SearchTree::view() const {
  View view;
  for (const Chunk& c : chunks_) {
    view.parents_.push_back(c.parents.get());
    view.vias_.push_back(c.vias.get());
  }
  return view;
}

std::vector<spec::Statement> SearchTree::View::path(std::uint32_t index) const {
  std::vector<spec::Statement> statements;
  path(index, statements);
  return statements;
}

void SearchTree::View::path(std::uint32_t index, std::vector<spec::Statement>& statements) const {
  statements.clear();
  for (std::uint32_t at = index; at != 0; at = parents_[at / kChunk][at % kChunk]) {
    statements.push_back(unpack_statement(vias_[at / kChunk][at % kChunk]));
  }
  std::reverse(statements.begin(), statements.end());
}

// Only counterexamples walk the tree itself (once per invariant); the search rebuilds through views.
std::vector<spec::Statement> SearchTree::path(std::uint32_t index) const { return view().path(index); }

}  // namespace fp8sm::explorer
