#include "explorer/search/test_faults.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fp8sm::explorer {

void test_fault(const char* point, int layer, int rank) {
  const char* setting = std::getenv("FP8SM_TEST_FAULT");
  if (setting == nullptr) return;
  std::istringstream in(setting);
  std::string action;
  std::string wanted_point;
  int wanted_layer = -1;
  int wanted_rank = -1;
  in >> action >> wanted_point >> wanted_layer;
  if (!(in >> wanted_rank)) wanted_rank = -1;
  if (wanted_point != point || wanted_layer != layer || (wanted_rank >= 0 && wanted_rank != rank)) return;
  if (action == "kill") {
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
  static bool signalled = false;  // "interrupt" and "stop" act once per process
  if ((action == "interrupt" || action == "stop") && !signalled) {
    signalled = true;
    std::fflush(nullptr);
    std::raise(action == "interrupt" ? SIGINT : SIGSTOP);
  }
  if (action == "throw") {
    throw std::runtime_error(fmt::format("a fault on purpose (FP8SM_TEST_FAULT) at {} of layer {}", point, layer));
  }
}

void test_thread_start_fault(std::size_t thread) {
  const char* setting = std::getenv("FP8SM_TEST_FAULT");
  if (setting == nullptr) return;
  std::istringstream in(setting);
  std::string action;
  std::string point;
  std::size_t wanted = 0;
  in >> action >> point >> wanted;
  if (action == "refuse" && point == "thread-start" && wanted == thread) {
    throw std::system_error(EAGAIN, std::generic_category(), "a fault on purpose (FP8SM_TEST_FAULT)");
  }
}

}  // namespace fp8sm::explorer
