// The search engine's entry point: every state of `model` reachable in up to options.depth
// statements, breadth first, each state stored once, on options.threads threads and this
// process's part of `ranks` (search.hpp says how and why; search_model.hpp what the engine asks
// of a model).
#pragma once

#include "explorer/search/ranks.hpp"
#include "explorer/search/search_model.hpp"
#include "explorer/search/search_types.hpp"

namespace fp8sm::explorer {

// Every rank calls it with the same options and an equal model; every rank returns the whole
// result. `progress` is called on rank 0 only: first when the search starts (with layer 0, or
// the layer a resumed search starts from), then after each layer. Throws std::invalid_argument
// for options that contradict each other (resume without a snapshot directory; a program list
// with a budget or a snapshot).
SearchResult run_engine(const EngineOptions& options, const SearchModel& model, Ranks& ranks,
                        const ProgressCallback& progress = {});

}  // namespace fp8sm::explorer
