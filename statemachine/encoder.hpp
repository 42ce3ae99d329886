// Little-endian byte packing for snapshots: equal encodings mean equal states.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace fp8sm::statemachine {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "snapshots copy little-endian bytes as they are");

// Appends the low `bytes` bytes of `value`.
inline void put(std::string& out, std::uint64_t value, int bytes) {
  char raw[sizeof value];
  std::memcpy(raw, &value, sizeof value);
  out.append(raw, static_cast<std::size_t>(bytes));
}

}  // namespace fp8sm::statemachine
