// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Everything a command that talks to Proxmox and the guests needs, built from the settings file.
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "ansible/playbooks.hpp"
#include "cli.hpp"
#include "guest/port.hpp"
#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/result_store.hpp"
#include "journal/state_dir.hpp"
#include "journal/storage.hpp"
#include "policy/model.hpp"
#include "proxmox/api.hpp"
#include "proxmox/guest_agent.hpp"
#include "reconcile/engine.hpp"
#include "settings/model.hpp"
#include "timing/sleeper.hpp"

namespace pw::cli {

struct Runtime {
  settings::ControllerSettings settings;
  std::unique_ptr<proxmox::Api> api;
  // The guests' agents through `api` (spec.observe.via agent or auto); after api, so it goes first.
  std::unique_ptr<proxmox::GuestAgent> agent;
  std::unique_ptr<guest::GuestPort> guests;
  ansible::PlaybookOptions playbook_options;  // what the guest port generates with; --emit-playbooks too
  std::unique_ptr<journal::StateDir> state;
  std::unique_ptr<journal::JournalStore> journals;
  std::unique_ptr<journal::GuestLocks> locks;
  std::unique_ptr<journal::PolicyResultStore> results;
  journal::SystemClock clock;
  timing::RealSleeper sleeper;
  std::unique_ptr<reconcile::Engine> engine;
};

struct RuntimeNeeds {
  bool proxmox = true;
  bool guests = true;
};

// Opens the state directory with the settings a command loaded (load_settings: once per run),
// connects nothing yet (the first call does).
Result<std::unique_ptr<Runtime>> make_runtime(settings::ControllerSettings loaded, const GlobalOptions& globals,
                                              RuntimeNeeds needs, reconcile::EngineOptions engine_options,
                                              reconcile::ProgressSink progress);
// The same, loading the settings first.
Result<std::unique_ptr<Runtime>> make_runtime(const GlobalOptions& globals, RuntimeNeeds needs,
                                              reconcile::EngineOptions engine_options,
                                              reconcile::ProgressSink progress);

// The policies named on the command line, or the settings' policy directory; exits the command
// with the diagnostics printed when they are not valid.
Result<std::vector<policy::StoragePath>> load_policies(const Args& args, const settings::ControllerSettings& loaded,
                                                       const GlobalOptions& globals,
                                                       std::filesystem::path* policies_root);

// `git rev-parse HEAD` of the policy directory, and whether the tree has uncommitted changes.
struct PolicyRevision {
  std::string commit;
  bool dirty = false;
};
std::optional<PolicyRevision> policy_revision(const std::filesystem::path& dir);

}  // namespace pw::cli
