#include "explorer/model/statement_code.hpp"

#include <stdexcept>

#include "spec/format.hpp"

namespace fp8sm::explorer {

namespace {
constexpr unsigned kLinearBase = 64;
constexpr unsigned kSaveBase = 128;
constexpr unsigned kBackwardBase = 160;

[[noreturn]] void does_not_fit(const spec::Statement& s) {
  throw std::invalid_argument(fmt::format("statement '{}' does not fit the search's one-byte statement code", s));
}
}  // namespace

std::uint8_t pack_statement(const spec::Statement& s) {
  switch (s.op) {
    case spec::Op::Linear:
      if (s.name >= kMaxPackedModules) does_not_fit(s);
      return static_cast<std::uint8_t>(kLinearBase + s.name);
    case spec::Op::Save:
      if (s.name >= kMaxPackedTapes) does_not_fit(s);
      return static_cast<std::uint8_t>(kSaveBase + s.name);
    case spec::Op::Backward: {
      const unsigned tape = s.name == spec::kCurrentGraph ? 0u : s.name + 1u;
      const unsigned code = kBackwardBase + tape * 2u + (s.retain ? 1u : 0u);
      if (code > 255u) does_not_fit(s);
      return static_cast<std::uint8_t>(code);
    }
    default:
      if (s.name != 0 || s.retain || static_cast<unsigned>(s.op) >= 16u) does_not_fit(s);
      return static_cast<std::uint8_t>(s.op);
  }
}

spec::Statement unpack_statement(std::uint8_t packed) {
  spec::Statement s;
  if (packed >= kBackwardBase) {
    const unsigned tape = (packed - kBackwardBase) / 2u;
    s.op = spec::Op::Backward;
    s.retain = (packed & 1u) != 0;
    s.name = tape == 0 ? spec::kCurrentGraph : static_cast<std::uint16_t>(tape - 1u);
  } else if (packed >= kSaveBase) {
    s.op = spec::Op::Save;
    s.name = static_cast<std::uint16_t>(packed - kSaveBase);
  } else if (packed >= kLinearBase) {
    s.op = spec::Op::Linear;
    s.name = static_cast<std::uint16_t>(packed - kLinearBase);
  } else {
    s.op = static_cast<spec::Op>(packed);
  }
  return s;
}

}  // namespace fp8sm::explorer
