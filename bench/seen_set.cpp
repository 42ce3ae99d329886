// The seen-set at scale (explorer/search/fingerprint_set.hpp): inserts N distinct random
// fingerprints, as a search's new states, then looks each up again, and prints its bytes a
// state, the slot's width, the rates and the collision probability of N states' 80 bits, and how
// many times it grew (`/usr/bin/time -f %M` gives the peak, at the last growth). With
// --reserve-load, the table is sized once for N states at that load, and the last tenth's
// insertion rate says what a fuller table costs. Then,
// without allocating, the bytes a state of a table 90 % full at 10^8, 10^9 and 10^10 states.
//
//   build/bench/seen_set --states 100000000
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>

#include "explorer/search/fingerprint_set.hpp"
#include "spread_fingerprints.hpp"

namespace {

using fp8sm::explorer::Fingerprint;
using fp8sm::explorer::FingerprintSet;

// Distinct, well-spread fingerprints, as XXH3's.
Fingerprint fingerprint_of(std::uint64_t i) {
  return {fp8sm::test_support::splitmix64(i), fp8sm::test_support::splitmix64(i + (1ull << 62))};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the seen-set's bytes a state and rates"};
  std::uint64_t states = 10'000'000;
  app.add_option("--states", states, "distinct fingerprints to insert")->check(CLI::Range(1ull, 4'000'000'000ull));
  double reserve_load = 0.0;
  app.add_option("--reserve-load", reserve_load,
                 "reserve the table once for the states, this full with them (as a search's last layer; "
                 "0, the default: grow by fifths)")
      ->check(CLI::Range(0.0, FingerprintSet::kFullestLoad));
  CLI11_PARSE(app, argc, argv);

  FingerprintSet set;
  if (reserve_load > 0.0) set.reserve(static_cast<std::size_t>(states), reserve_load);
  const auto start = std::chrono::steady_clock::now();
  // The last tenth's rate on its own: with a reserved table, that is where it is fullest.
  const std::uint64_t last_tenth = states - states / 10;
  auto last_tenth_start = start;
  for (std::uint64_t i = 0; i < states; ++i) {
    if (i == last_tenth) last_tenth_start = std::chrono::steady_clock::now();
    if (!set.insert(fingerprint_of(i))) {
      fmt::print(stderr, "seen_set: fingerprint {} counted as seen\n", i);
      return 1;
    }
  }
  const double insert_seconds = seconds_since(start);
  const double last_tenth_seconds = seconds_since(last_tenth_start);
  const auto again = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < states; ++i) {
    if (set.insert(fingerprint_of(i))) {
      fmt::print(stderr, "seen_set: fingerprint {} lost\n", i);
      return 1;
    }
  }
  const double lookup_seconds = seconds_since(again);
  const double n = static_cast<double>(states);
  fmt::print("{} states in {} homes ({:.0f} % full): {:.2f} bytes a state, {:.1f} M inserts/s, {:.1f} M repeat lookups/s, "
             "collision probability {:.1e}\n",
             states, set.home_slots(), 100.0 * n / static_cast<double>(set.home_slots()), static_cast<double>(set.bytes()) / n,
             n / insert_seconds / 1e6, n / lookup_seconds / 1e6, FingerprintSet::collision_probability(n));
  fmt::print("the last tenth: {:.1f} M inserts/s\n", static_cast<double>(states - last_tenth) / last_tenth_seconds / 1e6);
  fmt::print("{} growths, {} of them where the table lies\n", set.growths(), set.growths_in_place());
  fmt::print("a table 90 % full, {} bits kept a state:\n", FingerprintSet::kEffectiveBits);
  const FingerprintSet empty(16);  // bytes_for(n) is what a table of n takes, or this one's bytes if more
  for (const double at : {1e6, 1e8, 1e9, 1e10}) {
    fmt::print("  {:.0e} states: {:.2f} bytes a state, collision probability {:.1e}\n", at,
               static_cast<double>(empty.bytes_for(static_cast<std::size_t>(at))) / at, FingerprintSet::collision_probability(at));
  }
  return 0;
}
