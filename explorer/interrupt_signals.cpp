#include "explorer/interrupt_signals.hpp"

#include <time.h>

#include <csignal>
#include <cstdint>

namespace fp8sm::explorer {

namespace {

static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler may only store to a lock-free atomic");
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "a signal handler may only store to a lock-free atomic");

std::atomic<bool> stop_requested{false};
std::atomic<std::int64_t> first_signal_at_ns{0};
volatile std::sig_atomic_t received_signal = 0;

// A second signal within this of the first is the same request (interrupt_signals.hpp).
constexpr std::int64_t kSameRequestNs = 1'000'000'000;

struct sigaction replaced_int {};
struct sigaction replaced_term {};

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

extern "C" void on_interrupt(int signal) {
  const std::int64_t now = monotonic_ns();
  if (!stop_requested.load(std::memory_order_relaxed)) {
    received_signal = signal;
    first_signal_at_ns.store(now, std::memory_order_relaxed);
    stop_requested.store(true, std::memory_order_relaxed);
    return;
  }
  if (now - first_signal_at_ns.load(std::memory_order_relaxed) < kSameRequestNs) return;
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal, &default_action, nullptr);
  raise(signal);
}

}  // namespace

InterruptSignals::InterruptSignals() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
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
