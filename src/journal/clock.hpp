// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Wall-clock time behind an interface, so journals and locks written in tests carry fixed times.
#include <chrono>
#include <string>

namespace pw::journal {

using TimePoint = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::system_clock::now(); }
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start) : now_(start) {}
  TimePoint now() const override { return now_; }
  void advance(std::chrono::milliseconds d) { now_ += d; }

 private:
  TimePoint now_;
};

// RFC 3339 in UTC with milliseconds: "2024-05-05T02:00:00.123Z".
std::string format_utc(TimePoint t);

}  // namespace pw::journal
