#include "explorer/search/search_path.hpp"

#include <fmt/core.h>

#include "statemachine/storage.hpp"

namespace fp8sm::explorer {

void SearchPath::too_long() {
  throw statemachine::CapacityError(
      fmt::format("the program needs more than {} statements and closing braces in a search path", kMaxPathCodes));
}

SearchPath SearchPath::parent() const {
  SearchPath up = *this;
  const int n = size();
  if (n > 0) up.codes_[n - 1] = kNoStatementCode;
  return up;
}

std::vector<spec::Statement> SearchPath::statements() const {
  std::vector<spec::Statement> out;
  for (int i = 0, n = size(); i < n; ++i) out.push_back(unpack_statement(codes_[i]));
  return out;
}

std::uint64_t child_key(std::uint64_t parent_key, int parent_depth, unsigned link) {
  if (link >= kMaxLinksPerParent) {
    throw statemachine::CapacityError(fmt::format(
        "a state has more than {} successors and closing braces in the search's discovery key", kMaxLinksPerParent));
  }
  const int shift = 8 * (kMaxKeyLayers - 1 - parent_depth);
  return parent_key | (static_cast<std::uint64_t>(link) << shift);
}

}  // namespace fp8sm::explorer
