// A state's fingerprint: 128 bits of XXH3 over its canonical bytes (canonical_state.hpp). Equal
// fingerprints stand for equal states. The search keeps 80 of the bits (the high word and 16
// of the low, search/fingerprint_set.hpp), and the high word alone picks the rank that owns
// the state (search/ranks.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8sm::explorer {

struct Fingerprint {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  friend bool operator==(const Fingerprint& a, const Fingerprint& b) { return a.high == b.high && a.low == b.low; }
  friend bool operator!=(const Fingerprint& a, const Fingerprint& b) { return !(a == b); }
  friend bool operator<(const Fingerprint& a, const Fingerprint& b) {
    return a.high != b.high ? a.high < b.high : a.low < b.low;
  }
};

// For std::unordered_set and the like (tests, benchmarks): the high word is uniform already.
struct FingerprintHash {
  std::size_t operator()(const Fingerprint& f) const { return static_cast<std::size_t>(f.high); }
};

}  // namespace fp8sm::explorer
