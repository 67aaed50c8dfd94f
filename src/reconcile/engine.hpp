#pragma once
// The reconcile loop (controller-runtime's shape): observe every policy's guest in one pass,
// plan (pure), apply the plan step by step under a journal and a per-guest lock, verify with
// byte counters, roll back what cannot be proven, report. Conflicts (a Proxmox digest or an
// fstab hash that moved) are re-observed and re-planned, never overwritten.
#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/result_store.hpp"
#include "journal/storage.hpp"
#include "plan/model.hpp"
#include "plan/planner.hpp"
#include "policy/model.hpp"
#include "proxmox/api.hpp"
#include "reconcile/guest_port.hpp"
#include "report/run_report.hpp"
#include "verify/nfs_evidence.hpp"
#include "verify/verifier.hpp"

namespace pw::reconcile {

// Long steps announce themselves so a terminal can show progress; JSON output ignores them.
struct ProgressEvent {
  std::string policy;
  std::string what;        // "probe", "restart", "task", ...
  std::string detail;      // human text
  std::uint64_t done = 0;  // bytes or seconds done, when known
  std::uint64_t total = 0;
};
using ProgressSink = std::function<void(const ProgressEvent&)>;

// Waiting between polls and before a re-plan; a test can make it instant.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleep(std::chrono::milliseconds d) = 0;
};

class RealSleeper final : public Sleeper {
 public:
  void sleep(std::chrono::milliseconds d) override;
};

struct EngineOptions {
  int max_rounds = 3;                                    // re-plans after conflicts
  std::chrono::milliseconds requeue_backoff{1000};       // doubles per round
  proxmox::WaitOptions task_wait{std::chrono::minutes(10), std::chrono::milliseconds(200), std::chrono::seconds(3)};
  std::chrono::seconds guest_return_timeout{600};        // after a restart
  std::chrono::seconds interface_return_timeout{120};    // after a NIC hot-plug
  int max_measurements = 5;                              // adaptive probe: grow or re-measure
  // Guests observed and planned at a time (one burst of config reads and one facts run each):
  // memory holds one batch's observations, whatever the size of the fleet. A guest's facts run
  // output is ≈ 27 KiB and its parse a few times that: 64 keep a 10,000-VM check under 64 MiB.
  std::size_t observe_batch = 64;
  std::string backup_dir = "/var/backups/pathwarden";
  std::string policies_revision;
  bool policies_dirty = false;
};

struct Dependencies {
  proxmox::Api& api;
  GuestPort& guests;
  journal::JournalStore& journals;
  journal::GuestLocks& locks;
  journal::PolicyResultStore& results;
  const journal::Clock& clock;
  Sleeper& sleeper;
  ProgressSink progress;
};

class Engine {
 public:
  Engine(Dependencies deps, EngineOptions options) : d_(std::move(deps)), o_(std::move(options)) {}

  // One pass over Proxmox (one list call, one config read per VM) and one facts run.
  std::vector<plan::Observation> observe(std::span<const policy::StoragePath> policies);

  plan::Plan make_plan(std::span<const policy::StoragePath> policies, std::span<const plan::Observation> observed);

  // observe + make_plan in batches of options.observe_batch guests (a guest's policies share a
  // batch): one list call in all, then per batch its config reads (while its facts run) and its
  // plans. Only the plans are kept.
  plan::Plan observe_and_plan(std::span<const policy::StoragePath> policies);

  // reconcile: observe, plan, apply, verify, roll back; re-plan conflicts. check_only: stop
  // after planning and report drift.
  report::RunReport reconcile(std::span<const policy::StoragePath> policies, bool check_only);

  // Applies exactly this plan, after checking that reality has not moved since it was made
  // (digests and fstab hashes); refuses otherwise.
  report::RunReport apply(const plan::Plan& plan);

  // Audit without changes: effective options, queues, connection addresses; a probe only when
  // asked.
  report::RunReport verify(std::span<const policy::StoragePath> policies, bool probe);

  // Finishes or undoes every interrupted run found in the journals.
  report::RunReport recover();

 private:
  struct Work;
  using PlanSink = std::function<void(std::size_t index, plan::PolicyPlan&& plan)>;
  plan::PlanningContext planning_context();
  struct ListedGuests;
  ListedGuests list_guests();
  std::vector<plan::Observation> observe_listed(const ListedGuests& listed,
                                                std::span<const policy::StoragePath* const> policies);
  void observe_and_plan(std::span<const policy::StoragePath> policies, const plan::PlanningContext& ctx,
                        const PlanSink& take);
  void execute(const plan::Plan& plan, report::RunReport& report, std::vector<std::string>* conflicted);
  void run_phase(std::string_view kind, std::vector<Work*>& works);
  void run_set_nic(Work& w);
  void run_restart(std::vector<Work*>& batch);
  void run_channels(std::vector<Work*>& batch, bool inverse);
  void run_fstab(std::vector<Work*>& batch);
  void run_verify(std::vector<Work*>& batch);
  void roll_back(std::vector<Work*>& batch);
  void check_restored(Work& w, const std::map<std::string, GuestResult<guest::GuestFacts>>& facts);
  std::optional<std::string> revert_nic(const plan::SetNic& s, bool restart_if_pending, const std::string& host);
  void finish(Work& w);
  static report::PolicyReport new_entry(const plan::PolicyPlan& p);
  report::PolicyReport& report_of(report::RunReport& r, const plan::PolicyPlan& p);
  report::RunReport new_report(std::string mode, std::string plan_id);
  void remember_results(const report::RunReport& r);
  void progress(std::string policy, std::string what, std::string detail, std::uint64_t done = 0,
                std::uint64_t total = 0);

  Dependencies d_;
  EngineOptions o_;
};

// The guest's NFS evidence as the verifier reads it.
verify::NfsEvidence evidence_from(const guest::GuestFacts& facts, std::string_view mount_point,
                                  std::string_view intended_mac);
report::Verification verification_report(const verify::VerificationResult& result, const plan::VerifyPath& v,
                                         std::uint64_t probe_bytes, int probes);

}  // namespace pw::reconcile
