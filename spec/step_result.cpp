#include "spec/step_result.hpp"

namespace fp8sm::spec {

const char* name(ExceptionKind kind) {
  switch (kind) {
    case ExceptionKind::UserError: return "UserError";
    case ExceptionKind::KeyError: return "KeyError";
    case ExceptionKind::IndexError: return "IndexError";
    case ExceptionKind::RuntimeError: return "RuntimeError";
    case ExceptionKind::AttributeError: return "AttributeError";
    case ExceptionKind::TypeError: return "TypeError";
  }
  return "?";
}

}  // namespace fp8sm::spec
