// The invariants of spec §5 as named values a user can list and select (explorer --check).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fp8sm::spec {

enum class Invariant : std::uint8_t { I1, I2, I3, I4, I5, I6, I7, I8, I9 };

inline constexpr std::array<Invariant, 9> kAllInvariants = {
    Invariant::I1, Invariant::I2, Invariant::I3, Invariant::I4, Invariant::I5,
    Invariant::I6, Invariant::I7, Invariant::I8, Invariant::I9};

std::string_view id(Invariant invariant);           // "I1"
std::string_view summary(Invariant invariant);      // one line, for `explorer list-invariants`
std::optional<Invariant> parse_invariant(std::string_view text);

// A set of invariants, ordered by id.
class InvariantSet {
 public:
  void add(Invariant i) { bits_ |= bit(i); }
  bool contains(Invariant i) const { return (bits_ & bit(i)) != 0; }
  bool empty() const { return bits_ == 0; }
  void merge(InvariantSet other) { bits_ |= other.bits_; }
  std::uint16_t bits() const { return bits_; }
  bool operator==(InvariantSet other) const { return bits_ == other.bits_; }
  bool operator!=(InvariantSet other) const { return bits_ != other.bits_; }
  std::string to_string() const;  // "I1 I2 I8", or "none"

 private:
  static std::uint16_t bit(Invariant i) { return static_cast<std::uint16_t>(1u << static_cast<unsigned>(i)); }
  std::uint16_t bits_ = 0;
};

}  // namespace fp8sm::spec
