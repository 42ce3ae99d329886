#include "runtime/context_ref.hpp"

#include <fmt/core.h>

#include "runtime/context.hpp"
#include "runtime/errors.hpp"

namespace fp8sm::runtime {

ContextRef::ContextRef(Context& context) : context_(&context), life_(context.life_) {}

Context& ContextRef::get(std::string_view kind, std::string_view name) const {
  if (life_.expired()) {
    throw MisuseError(fmt::format("{}{}{}: its Context was destroyed (a module or scope is used only while the context "
                                  "it was made with lives)",
                                  kind, name.empty() ? "" : " ", name));
  }
  return *context_;
}

}  // namespace fp8sm::runtime
