// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What every unit of the reconcile loop shares: the I/O ports it drives (Proxmox, the guests,
// journals, locks, results, time), the engine's options and the progress sink. Units hold a
// `const Context&`; the Engine owns the one Context.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "guest/port.hpp"
#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/result_store.hpp"
#include "journal/retention.hpp"
#include "journal/storage.hpp"
#include "policy/time_window.hpp"
#include "proxmox/api.hpp"
#include "reconcile/progress.hpp"
#include "timing/sleeper.hpp"

namespace pw::reconcile {

struct EngineOptions {
  int max_rounds = 3;                               // re-plans after conflicts
  std::chrono::milliseconds requeue_backoff{1000};  // doubles per round
  proxmox::WaitOptions task_wait{std::chrono::minutes(10), std::chrono::milliseconds(200), std::chrono::seconds(3)};
  std::chrono::seconds guest_return_timeout{600};      // after a restart
  std::chrono::seconds interface_return_timeout{120};  // after a NIC hot-plug
  int max_measurements = 5;                            // adaptive probe: grow or re-measure
  // Guests observed and planned at a time (one burst of config reads and one facts run each):
  // memory holds one batch's observations, whatever the size of the fleet. A guest's facts run
  // output is ≈ 27 KiB and its parse a few times that: 64 keep a 10,000-VM check under 64 MiB.
  std::size_t observe_batch = 64;
  std::string backup_dir = "/var/backups/pathwarden";
  std::string policies_revision;
  bool policies_dirty = false;
  // Restart windows that name no zone are read in this one; nullptr: the controller's (TZ, else
  // /etc/localtime), looked up when a run plans or applies.
  const date::time_zone* local_zone = nullptr;
  // Asked at each safe point (before each phase, between probe rounds and observe batches):
  // the signal number when the run was asked to stop (SIGTERM, SIGINT), else 0. Unset: never.
  std::function<int()> stop_requested;
  // Finished journals kept after a run that wrote some (journal/retention.hpp).
  journal::Retention retention;
  // Who the API calls are made as ("pathwarden@pve!reconcile", or a user): named in the pveum
  // command a missing privilege is reported with.
  std::string api_identity;
};

struct Dependencies {
  proxmox::Api& api;
  guest::GuestPort& guests;
  journal::JournalStore& journals;
  journal::GuestLocks& locks;
  journal::PolicyResultStore& results;
  const journal::Clock& clock;
  timing::Sleeper& sleeper;  // every wait: task polls, a NIC coming back, re-plan backoff
  ProgressSink progress;
};

struct Context {
  Dependencies deps;
  EngineOptions options;

  void progress(Activity activity, std::string policy, std::string detail, std::uint64_t done = 0,
                std::uint64_t total = 0) const {
    if (deps.progress) deps.progress({activity, std::move(policy), std::move(detail), done, total});
  }
  // Something failed that the run's report cannot carry (a result or journal not stored): the
  // controller logs it as a warning whatever the output.
  void warn(std::string policy, std::string text) const {
    progress(Activity::warning, std::move(policy), std::move(text));
  }
  // The signal a stop was asked by, 0 when none (EngineOptions::stop_requested).
  int stop_signal() const { return options.stop_requested ? options.stop_requested() : 0; }
  // The zone of restart windows that name none (EngineOptions::local_zone).
  const date::time_zone* local_zone() const {
    return options.local_zone != nullptr ? options.local_zone : policy::controller_zone();
  }
  // Why a disruptive step with this restart window (as written; "" = any time) may not start
  // now: the window is closed, or it names a zone this machine does not know. nullopt: it may.
  std::optional<std::string> restart_window_refusal(const std::string& window) const;
};

// Messages of the ports' errors, as the reports show them.
std::string describe(const proxmox::ApiError& e);
std::string describe(const guest::GuestFailure& f);

}  // namespace pw::reconcile
