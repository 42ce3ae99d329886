#include "explorer/search/ranks.hpp"

namespace fp8sm::explorer {

// One rank has no other to talk to: the search never sends when alone.
void SingleRank::send(int, Bytes) { throw std::logic_error("a search alone sends no message"); }
Bytes SingleRank::receive(int) { throw std::logic_error("a search alone receives no message"); }

}  // namespace fp8sm::explorer
