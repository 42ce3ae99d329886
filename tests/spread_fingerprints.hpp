// Well-spread 64-bit values for tests and benchmarks that stand in for XXH3 fingerprints.
#pragma once

#include <cstdint>

namespace fp8sm::test_support {

// splitmix64's finaliser over z + the golden ratio: distinct inputs give distinct outputs (it is
// a bijection), spread over all 64 bits as a good hash's are.
inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace fp8sm::test_support
