// Driving a Machine by hand in tests.
#pragma once

#include <gtest/gtest.h>

#include "statemachine/machine.hpp"

namespace fp8sm::test_support {

// A module's forward as three events (prepare, claim, end_forward), none of which may raise.
inline void forward_module(statemachine::Machine& machine, spec::ModuleId m) {
  ASSERT_FALSE(machine.fire(spec::ModulePrepare{m}));
  ASSERT_FALSE(machine.fire(spec::ModuleClaim{m}));
  ASSERT_FALSE(machine.fire(spec::ModuleEndForward{m}));
}

}  // namespace fp8sm::test_support
