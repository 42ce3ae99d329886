#include "spec/scenario.hpp"

namespace fp8sm::spec {

bool opens_block(Op op) {
  switch (op) {
    case Op::AutocastOn:
    case Op::AutocastOff:
    case Op::CheckpointReentrant:
    case Op::CheckpointNonReentrant:
    case Op::NoGrad:
    case Op::Try:
      return true;
    case Op::Close:
    case Op::Linear:
    case Op::RaiseAlways:
    case Op::RaiseOriginal:
    case Op::RaiseRecompute:
    case Op::RecomputeUncaptured:
    case Op::Save:
    case Op::Backward:
    case Op::Step:
      return false;
  }
  return false;  // unreachable for valid enumerators; keeps -Wreturn-type quiet
}

bool is_checkpoint(Op op) {
  return op == Op::CheckpointReentrant || op == Op::CheckpointNonReentrant;
}

}  // namespace fp8sm::spec
