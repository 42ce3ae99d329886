// A statement of the search's alphabet in one byte, the unit of a search path (search_path.hpp):
// 0..15 the op of a statement without a name, 64..127 `linear` of module 0..63, 128..159
// `save` of tape 0..31, 160..255 `backward` ((tape + 1) * 2 + retain, tape -1 being the current
// graph). 16..63 are no statement (search_path.hpp pads with one of them).
#pragma once

#include <cstdint>

#include "spec/scenario.hpp"

namespace fp8sm::explorer {

// Throws std::invalid_argument for a statement outside that range.
std::uint8_t pack_statement(const spec::Statement& s);
spec::Statement unpack_statement(std::uint8_t packed);
inline constexpr int kMaxPackedModules = 64;
inline constexpr int kMaxPackedTapes = 32;
// A byte that codes no statement.
inline constexpr std::uint8_t kNoStatementCode = 0x3F;

}  // namespace fp8sm::explorer
