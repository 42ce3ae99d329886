#include "runtime/recipe.hpp"

#include <stdexcept>

namespace fp8sm::runtime {

void Recipe::validate() const {
  if (margin < 0) throw std::invalid_argument("Recipe: margin must be 0 or more");
  if (amax_history_len < 1) throw std::invalid_argument("Recipe: amax_history_len must be 1 or more");
}

}  // namespace fp8sm::runtime
