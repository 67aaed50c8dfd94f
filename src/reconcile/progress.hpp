// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a run tells while it works (issue 41): the engine's units announce each activity as a
// ProgressEvent; the controller shows them, as one live line on a terminal and as log lines
// elsewhere (controller/progress.cpp). ProgressTracker folds the events into the one picture
// both show; time comes in as a value, so the picture and its cadence are tested without waiting.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace pw::reconcile {

enum class Activity : std::uint8_t {
  observe,   // done/total: guests observed of those selected
  proxmox,   // a NIC set through the API
  restart,   // a VM rebooted through Proxmox and waited for
  guests,    // fstab written and mounts re-made; total: guests
  probe,     // total: bytes one probe writes; done: bytes a finished probe moved
  rollback,  // undoing what began
  recover,   // finishing journals left by an interrupted run
  warning,   // not an activity: something failed that the run's report cannot carry
};
std::string_view to_string(Activity a);

struct ProgressEvent {
  Activity activity = Activity::observe;
  std::string policy;      // when about one policy
  std::string detail;      // human text
  std::uint64_t done = 0;  // see Activity
  std::uint64_t total = 0;
};
using ProgressSink = std::function<void(const ProgressEvent&)>;

class ProgressTracker {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::seconds kLogEvery{60};

  explicit ProgressTracker(TimePoint start) : start_(start), last_line_(start) {}

  // Folds the event in; true when it starts another activity (off a terminal: a log line is due).
  // Warnings change nothing of the picture.
  bool take(const ProgressEvent& e, TimePoint now);
  // The picture: "observing guests (12 of 40) · probed 768 MiB · elapsed 1m05s".
  std::string line(TimePoint now) const;
  // Off a terminal: whether a line is due because a minute passed since the last one (which
  // this marks as written). Nothing before the first activity.
  bool minute_due(TimePoint now);
  bool started() const { return current_.has_value(); }

 private:
  TimePoint start_;
  TimePoint last_line_;
  std::optional<ProgressEvent> current_;
  std::uint64_t guests_done_ = 0;
  std::uint64_t guests_total_ = 0;
  std::uint64_t bytes_probed_ = 0;
};

// "45s", "1m05s", "1h02m".
std::string format_elapsed(std::chrono::seconds s);

}  // namespace pw::reconcile
