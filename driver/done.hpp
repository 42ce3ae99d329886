// How an operation of the driver ended: normally, or with an exception of the modelled program
// in flight, which the host keeps (the model's interpreter). A host that throws its exceptions
// (the runtime) never sees Raising: they pass through as C++ exceptions.
#pragma once

#include <cstdint>

namespace fp8sm::driver {

enum class [[nodiscard]] Done : std::uint8_t { Normally, Raising };

}  // namespace fp8sm::driver
