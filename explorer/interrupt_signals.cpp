#include "explorer/interrupt_signals.hpp"

#include <csignal>

namespace fp8sm::explorer {

namespace {

static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler may only store to a lock-free atomic");

std::atomic<bool> stop_requested{false};
volatile std::sig_atomic_t received_signal = 0;

struct sigaction replaced_int {};
struct sigaction replaced_term {};

extern "C" void on_interrupt(int signal) {
  received_signal = signal;
  stop_requested.store(true, std::memory_order_relaxed);
}

}  // namespace

InterruptSignals::InterruptSignals() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the handler catches one signal only; a second has its default action.
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  sigaction(SIGINT, &action, &replaced_int);
  sigaction(SIGTERM, &action, &replaced_term);
}

InterruptSignals::~InterruptSignals() {
  sigaction(SIGINT, &replaced_int, nullptr);
  sigaction(SIGTERM, &replaced_term, nullptr);
}

const std::atomic<bool>& InterruptSignals::requested() const { return stop_requested; }

std::string InterruptSignals::received() const {
  switch (received_signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}

}  // namespace fp8sm::explorer
