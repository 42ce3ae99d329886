// SIGINT and SIGTERM during a search (explorer/main.cpp installs this around the search only;
// other commands end at a signal as any program does). The first such signal asks the search
// to stop (SearchOptions::interrupt): it stops before its next parent (several ranks: at the
// next round they agree on), and the explorer reports what it explored and exits with status 4.
// A second signal is not caught: its default action ends the process at once.
//
// The handler only stores to a lock-free atomic and a sig_atomic_t, which is all a handler may
// safely do; system calls it interrupts are restarted (SA_RESTART), so that a snapshot being
// written is not cut short by an EINTR.
#pragma once

#include <atomic>
#include <string>

namespace fp8sm::explorer {

class InterruptSignals {
 public:
  InterruptSignals();   // installs the handlers of SIGINT and SIGTERM
  ~InterruptSignals();  // puts back the ones it replaced
  InterruptSignals(const InterruptSignals&) = delete;
  InterruptSignals& operator=(const InterruptSignals&) = delete;

  // Set once a signal came: what SearchOptions::interrupt points to.
  const std::atomic<bool>& requested() const;
  // "SIGINT" or "SIGTERM", the signal that came to this process; empty if none did.
  std::string received() const;
};

}  // namespace fp8sm::explorer
