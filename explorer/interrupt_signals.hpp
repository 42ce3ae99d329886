// SIGINT and SIGTERM during a search (explorer/main.cpp installs this around the search only;
// other commands end at a signal as any program does). The first such signal asks the search
// to stop (SearchOptions::interrupt): it stops before its next parent (several ranks: at the
// next round they agree on), and the explorer reports what it explored and exits with status 4.
// A second signal a second or more after the first ends the process at once, by the signal's
// default action. One sooner is the same request again: GNU timeout sends its signal to the
// process and then to the process group, which holds the process too, so a search run under
// `timeout` gets it twice at once, and must still report.
//
// The handler only reads the monotonic clock, stores to lock-free atomics and a sig_atomic_t,
// and, for a late second signal, puts back the default action and raises the signal again:
// all async-signal-safe. System calls it interrupts are restarted (SA_RESTART), so that a
// snapshot being written is not cut short by an EINTR.
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
