// Little-endian byte packing for snapshots: equal encodings mean equal states.
#pragma once

#include <cstdint>
#include <string>

namespace fp8sm::statemachine {

inline void put(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

}  // namespace fp8sm::statemachine
