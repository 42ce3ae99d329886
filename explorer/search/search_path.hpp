// How the search names a state without storing it: the statements from the empty program to it
// (its path, closing braces included) and where it was first found (its discovery key).
//
// A path is all a rank needs to rebuild a state (replaying it from the root) and to print a
// counterexample; it travels with every successor to the rank that owns it, so no rank ever asks
// another for a parent. Programs of a depth-bounded search have at most kMaxSearchDepth (8)
// statements and as many closing braces, and those of a search to the fixpoint at most
// kMaxFixpointDepth (48) and as many: a path is at most 96 one-byte codes (statement_code.hpp).
//
// The discovery key orders the states of one layer as the one-process search numbers them:
// byte j (from the most significant) is the index of the link that led from the state's
// depth-j ancestor to the next, among all the links its parent's expansion produced (every
// statement of the alphabet, then the closing braces after it). Parents are expanded in key order
// and their links in link order, so the first discovery of a state is the one with the smallest
// key, whichever rank expanded it; that keeps every shortest counterexample and every count the
// same for any number of ranks and threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "explorer/model/statement_code.hpp"
#include "spec/scenario.hpp"

namespace fp8sm::explorer {

inline constexpr int kMaxPathCodes = 96;

class SearchPath {
 public:
  SearchPath() { std::memset(codes_, kNoStatementCode, sizeof codes_); }

  int size() const {
    int n = 0;
    while (n < kMaxPathCodes && codes_[n] != kNoStatementCode) ++n;
    return n;
  }
  bool empty() const { return codes_[0] == kNoStatementCode; }
  std::uint8_t operator[](int i) const { return codes_[i]; }
  const std::uint8_t* codes() const { return codes_; }
  // Appends a statement's code; throws statemachine::CapacityError past kMaxPathCodes.
  void push(std::uint8_t code) { put(size(), code); }
  // Sets the code at `at` (0 ≤ at), for a caller that knows the path's length is `at`: what
  // push does without counting the codes first. Throws statemachine::CapacityError past
  // kMaxPathCodes.
  void put(int at, std::uint8_t code) {
    if (at >= kMaxPathCodes) too_long();
    codes_[at] = code;
  }
  // The path of `n` codes at `codes` (n ≤ kMaxPathCodes).
  static SearchPath from_codes(const std::uint8_t* codes, int n) {
    SearchPath path;
    std::memcpy(path.codes_, codes, static_cast<std::size_t>(n));
    return path;
  }
  // The path without its last code (the state's parent in the search's tree).
  SearchPath parent() const;
  std::vector<spec::Statement> statements() const;

  bool operator==(const SearchPath& other) const { return std::memcmp(codes_, other.codes_, sizeof codes_) == 0; }
  bool operator!=(const SearchPath& other) const { return !(*this == other); }

 private:
  [[noreturn]] static void too_long();
  std::uint8_t codes_[kMaxPathCodes];  // kNoStatementCode past the end
};
static_assert(sizeof(SearchPath) == kMaxPathCodes);

// Keys of layer d hold d link indices; a key's layer is known from context (the layer in hand).
inline constexpr int kMaxKeyLayers = 8;
inline constexpr unsigned kMaxLinksPerParent = 256;

// The key of the `link`-th successor of a state of depth `parent_depth` (0 ≤ parent_depth < 8)
// whose key is `parent_key`. Throws statemachine::CapacityError when `link` does not fit a byte.
std::uint64_t child_key(std::uint64_t parent_key, int parent_depth, unsigned link);

}  // namespace fp8sm::explorer
