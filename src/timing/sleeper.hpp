// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Monotonic time and waiting, injected: a deadline loop asks its Sleeper for the time and to
// wait, never std::chrono::steady_clock or std::this_thread, so tests run such loops instantly
// (ManualSleeper) and a fault that must happen "after a while" is triggered by an event instead.
// Wall-clock time (what journals and reports print) is journal::Clock's.
#include <chrono>

namespace pw::timing {

using Monotonic = std::chrono::steady_clock::time_point;

class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleep(std::chrono::milliseconds d) = 0;
  virtual Monotonic now() const = 0;
};

class RealSleeper final : public Sleeper {
 public:
  void sleep(std::chrono::milliseconds d) override;
  Monotonic now() const override { return std::chrono::steady_clock::now(); }
};

// Time moves only when someone sleeps: a loop with a deadline ends after the same number of
// rounds on any machine.
class ManualSleeper final : public Sleeper {
 public:
  void sleep(std::chrono::milliseconds d) override {
    now_ += d;
    slept_ += d;
    ++sleeps_;
  }
  Monotonic now() const override { return now_; }
  std::chrono::milliseconds slept() const { return slept_; }
  int sleeps() const { return sleeps_; }

 private:
  Monotonic now_{};
  std::chrono::milliseconds slept_{0};
  int sleeps_ = 0;
};

// The process's real sleeper, for callers that were given none.
Sleeper& real_sleeper();

}  // namespace pw::timing
