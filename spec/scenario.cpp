#include "spec/scenario.hpp"

namespace fp8sm::spec {

// opens_block and is_checkpoint are inline (scenario.hpp): the search asks them for every
// block of every state.

}  // namespace fp8sm::spec
