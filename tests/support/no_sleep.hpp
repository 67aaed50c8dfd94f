#pragma once
// The engine's waits with no wait at all, for tests whose clock or world does not need real time.
#include <chrono>

#include "reconcile/engine.hpp"

namespace pw::testing {

class NoSleep final : public reconcile::Sleeper {
 public:
  void sleep(std::chrono::milliseconds) override {}
};

}  // namespace pw::testing
