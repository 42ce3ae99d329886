// Expanding the states of a frontier: the model's cursor stands on each (rebuilt from its path),
// then every statement that may follow it is run on a copy of it (with the closes after it), on
// several threads. The
// chains of each parent (successor_record.hpp's Links) are handed, in the frontier's order, to
// a consumer on the calling thread, so what the search does with them does not depend on the
// thread count.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "explorer/search/frontier.hpp"
#include "explorer/search/search_model.hpp"
#include "explorer/search/search_types.hpp"
#include "explorer/search/successor_record.hpp"

namespace fp8sm::explorer {

class LayerExpansion {
 public:
  // The parent's index in the frontier and its chains; false stops the expansion (the search
  // stopped: nothing after it counts).
  using Consumer = std::function<bool(std::size_t index, const Links& links)>;
  // Shown the chains of a parent a little past the one about to be consumed, when they are
  // ready already: to ask the cache for what consuming them will read while this one is.
  using Lookahead = std::function<void(const Links& links)>;

  // A cursor of `model` per thread of `options`.
  LayerExpansion(const EngineOptions& options, const SearchModel& model);
  ~LayerExpansion();

  // Expands frontier[begin, end) on the options' threads, the calling thread among them; it
  // also hands each parent's chains to `consume`, in index order, as soon as they are ready
  // (workers run a bounded window ahead of it). The first exception a thread raised (a program
  // past the flat state's capacity) is rethrown once all have stopped. A thread that cannot
  // start (the system's limit on threads or memory) is a std::runtime_error "cannot start
  // worker thread K of T: why", thrown once the threads started before it are joined.
  void expand(const Frontier& frontier, std::size_t begin, std::size_t end, const Consumer& consume,
              const Lookahead& look_ahead = {});

 private:
  struct Scratch;
  void extend(StatementCode code, Scratch& scratch, Links& chains) const;
  void expand_parent(const Frontier& frontier, std::size_t index, Scratch& scratch, Links& out) const;

  bool coverage_;
  StatementCode close_;
  std::vector<std::unique_ptr<Scratch>> scratch_;  // one per thread, kept from call to call
  std::vector<Links> produced_;                    // the chains of the parents in the window
  std::unique_ptr<std::atomic<bool>[]> ready_;     // per slot: its parent's chains are ready
};

}  // namespace fp8sm::explorer
