// A symbolic stand-in for one FP8 scaling meta (amax history + scale, spec §6), precise enough
// to tell whether two computations saw the same scaling and whether an update folded the
// amax it should. Values are 64-bit fingerprints instead of tensors.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fp8sm::explorer {

inline std::uint64_t mix64(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct SymbolicMeta {
  std::uint64_t history = 0;  // the amax history's older rows and the scale derived from them
  std::uint64_t current = 0;  // row 0: the casts since the last update (0 = no cast)
  std::int32_t current_oldest_step = -1;  // the step of the oldest amax in row 0
  bool current_from_recompute = false;    // some amax in row 0 came from a recompute
  std::uint8_t unused[3] = {0, 0, 0};     // no padding: flat states are hashed as bytes

  // A cast accumulates its amax into row 0 (max is idempotent and commutative: so is OR).
  void accumulate(std::uint64_t amax_tag, bool recompute, int step) {
    current |= amax_tag;
    current_from_recompute = current_from_recompute || recompute;
    current_oldest_step = current_oldest_step < 0 ? step : std::min(current_oldest_step, step);
  }

  // The fused update (§6 step 3): a non-zero row 0 rolls into the history and the scale is
  // recomputed; a zero row 0 changes nothing.
  void fold() {
    if (current == 0) return;
    history = folded(history, current);
    current = 0;
    current_from_recompute = false;
    current_oldest_step = -1;
  }

  // The history after folding a non-zero row 0 into `history_before`.
  static std::uint64_t folded(std::uint64_t history_before, std::uint64_t current_row) {
    return mix64(history_before ^ mix64(current_row));
  }

  // fp8sm's drop of amaxes no update of their region folded.
  void discard_current() {
    current = 0;
    current_from_recompute = false;
    current_oldest_step = -1;
  }

  bool operator==(const SymbolicMeta& o) const { return history == o.history && current == o.current; }
  bool operator!=(const SymbolicMeta& o) const { return !(*this == o); }
};

// The amax a cast of module `m` produces in `step` when it sees scaling `seen`: the data of a
// step is the same in every run of the program, so the tag is a function of these alone.
inline std::uint64_t amax_tag(unsigned module, int step, std::uint64_t seen, bool backward) {
  return mix64(mix64(module * 2u + (backward ? 1u : 0u)) ^ mix64(static_cast<std::uint64_t>(step) << 1) ^ seen) | 1u;
}

}  // namespace fp8sm::explorer
