// A module's or a scope's reference to its context that knows when the context is gone. A
// program destroys its objects in any order, so a Linear (or an Autocast on the heap) may
// outlive the Context it was made with; using it then is a MisuseError naming it, never a use
// after free. The context keeps the token (a shared_ptr) whose weak copies these are.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/tensor.hpp"

namespace fp8sm::runtime {

class Context;

class ContextRef {
 public:
  explicit ContextRef(Context& context);

  // The context, or MisuseError saying that the `kind` (e.g. "Linear") named `name` (may be
  // empty) outlived it.
  Context& get(std::string_view kind, std::string_view name = {}) const;
  bool alive() const { return !life_.expired(); }

 private:
  Context* context_;
  std::weak_ptr<const ContextSerial> life_;
};

}  // namespace fp8sm::runtime
