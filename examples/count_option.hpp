// The examples' numeric options, read as decimal counts: CLI11 reads "-1" into an unsigned
// option as 2^64 - 1 and "010" into an int as octal, which turned `--batch -1` into a training
// that grew until the machine's memory was full.
#pragma once

#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <fmt/core.h>

namespace fp8sm::examples {

// The decimal count `text` of option `option`, within [low, high]; std::invalid_argument saying
// what was wrong otherwise (a sign, another base, anything but digits, out of range).
inline std::uint64_t count_option(std::string_view option, const std::string& text, std::uint64_t low,
                                  std::uint64_t high) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);  // base 10, no sign, no prefix
  if (text.empty() || stop != end || (error != std::errc() && error != std::errc::result_out_of_range)) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not a count in decimal digits", option, text));
  }
  if (error == std::errc::result_out_of_range || value < low || value > high) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not {} to {}", option, text, low, high));
  }
  return value;
}

}  // namespace fp8sm::examples
