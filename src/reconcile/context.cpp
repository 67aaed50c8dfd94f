// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/context.hpp"

#include "policy/time_window.hpp"

namespace pw::reconcile {

std::string describe(const proxmox::ApiError& e) {
  std::string s = e.message;
  if (!e.hint.empty()) s += " (" + e.hint + ")";
  return s;
}

std::string describe(const guest::GuestFailure& f) {
  return f.error.to_string();
}

std::optional<std::string> Context::restart_window_refusal(const std::string& window) const {
  if (window.empty()) return std::nullopt;
  auto w = policy::parse_time_window(window);
  if (!w) return "the restart window '" + window + "' cannot be read here: " + w.error().to_string();
  const auto now = deps.clock.now();
  if (w->contains(now, local_zone())) return std::nullopt;
  return "the restart window '" + window + "' is closed now (it is " + w->describe(now, local_zone()) +
         "); apply the plan inside the window, or plan again then";
}

}  // namespace pw::reconcile
