// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/progress.hpp"

#include "report/run_report.hpp"

namespace pw::reconcile {

std::string_view to_string(Activity a) {
  switch (a) {
    case Activity::observe:
      return "observe";
    case Activity::proxmox:
      return "proxmox";
    case Activity::restart:
      return "restart";
    case Activity::guests:
      return "guests";
    case Activity::probe:
      return "probe";
    case Activity::rollback:
      return "rollback";
    case Activity::recover:
      return "recover";
    case Activity::warning:
      return "warning";
  }
  return "?";
}

std::string format_elapsed(std::chrono::seconds s) {
  const auto n = s.count() < 0 ? 0 : s.count();
  char out[32];
  if (n < 60) {
    std::snprintf(out, sizeof out, "%llds", static_cast<long long>(n));
  } else if (n < 3600) {
    std::snprintf(out, sizeof out, "%lldm%02llds", static_cast<long long>(n / 60), static_cast<long long>(n % 60));
  } else {
    std::snprintf(out, sizeof out, "%lldh%02lldm", static_cast<long long>(n / 3600),
                  static_cast<long long>((n % 3600) / 60));
  }
  return out;
}

bool ProgressTracker::take(const ProgressEvent& e, TimePoint now) {
  if (e.activity == Activity::warning) return false;
  if (e.activity == Activity::observe) {
    guests_done_ = e.done;
    guests_total_ = e.total;
  }
  if (e.activity == Activity::probe && e.done > 0) {
    bytes_probed_ += e.done;  // a finished probe: the picture keeps the one that runs
    return false;
  }
  const bool another = !current_ || current_->activity != e.activity;
  current_ = e;
  if (another) last_line_ = now;  // the caller writes it now
  return another;
}

std::string ProgressTracker::line(TimePoint now) const {
  std::string out;
  if (current_) {
    if (!current_->policy.empty()) out += current_->policy + ": ";
    out += current_->detail;
    if (current_->activity == Activity::observe && guests_total_ > 0) {
      out += " (" + std::to_string(guests_done_) + " of " + std::to_string(guests_total_) + ")";
    }
    if (current_->activity == Activity::probe && current_->total > 0) {
      out += " (" + report::human_bytes(current_->total) + ")";
    }
  }
  if (bytes_probed_ > 0) out += " · probed " + report::human_bytes(bytes_probed_);
  out += " · elapsed " + format_elapsed(std::chrono::duration_cast<std::chrono::seconds>(now - start_));
  return out;
}

bool ProgressTracker::minute_due(TimePoint now) {
  if (!current_ || now - last_line_ < kLogEvery) return false;
  last_line_ = now;
  return true;
}

}  // namespace pw::reconcile
