#include "reconcile/engine.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "guest/interfaces.hpp"
#include "guest/sha256.hpp"
#include "journal/journal.hpp"
#include "proxmox/net_device.hpp"
#include "verify/verifier.hpp"

namespace pw::reconcile {
namespace json = boost::json;
using report::verdict::converged;
using report::verdict::drift;
using report::verdict::inconclusive;
using report::verdict::precondition_failed;
using report::verdict::rollback_failed;
using report::verdict::rolled_back;
using report::verdict::wrong_path;

void RealSleeper::sleep(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

namespace {

// Marks a step_failed record whose step was refused before it changed anything (a digest or
// fstab hash that moved): recover has nothing to undo for it.
constexpr std::string_view kRefused = "refused, nothing changed: ";

constexpr std::array<std::string_view, 5> kPhaseOrder{"set-nic", "restart-vm", "set-channels", "change-fstab",
                                                      "verify"};

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = kHex[rng() % 16];
  return s;
}

std::string describe(const proxmox::ApiError& e) {
  std::string s = e.message;
  if (!e.hint.empty()) s += " (" + e.hint + ")";
  return s;
}

std::string describe(const GuestFailure& f) { return f.error.to_string(); }

// A VM's config as in effect, from GET .../pending (one read gives values, pending and digest).
proxmox::VmConfig config_from_pending(const proxmox::PendingConfig& p) {
  proxmox::VmConfig c;
  c.ref = p.ref;
  c.digest = p.digest;
  for (const auto& item : p.items) {
    if (item.value) c.entries.emplace_back(item.key, *item.value);
  }
  return c;
}

verify::CounterSnapshot snapshot_from(const guest::GuestFacts& f) {
  verify::CounterSnapshot s;
  for (const auto& c : f.counters) {
    verify::InterfaceCounters ic;
    ic.name = c.name;
    ic.rx_bytes = c.rx_bytes;
    ic.tx_bytes = c.tx_bytes;
    if (const auto* i = guest::find_interface(f.interfaces, c.name)) {
      ic.mac = i->mac;
      ic.ifindex = i->ifindex;
      if (i->speed_mbps && *i->speed_mbps > 0) ic.speed_mbps = static_cast<std::uint64_t>(*i->speed_mbps);
    }
    s.interfaces.push_back(std::move(ic));
  }
  return s;
}

verify::DesiredPath desired_from(const plan::VerifyPath& v) {
  verify::DesiredPath d;
  d.intended_mac = v.intended_mac;
  d.mount_point = v.mount_point;
  d.server = v.server;
  d.nas_addresses = v.nas_addresses;
  d.vers = v.vers;
  if (v.nconnect) d.nconnect = static_cast<unsigned>(*v.nconnect);
  if (v.queues) d.queues = static_cast<unsigned>(*v.queues);
  return d;
}

}  // namespace

verify::NfsEvidence evidence_from(const guest::GuestFacts& f, std::string_view mount_point,
                                  std::string_view intended_mac) {
  verify::NfsEvidence e;
  for (const auto& m : f.mounts) {
    if (!m.is_nfs()) continue;
    verify::EffectiveMount em;
    em.device = m.device;
    em.mount_point = m.mount_point;
    em.fstype = m.fstype;
    for (const auto& o : m.options) em.options[o.name] = o.value.value_or("");
    e.mounts.push_back(std::move(em));
  }
  for (const auto& c : f.nfs_connections) {
    e.connections.push_back({c.local_address, static_cast<std::uint16_t>(c.local_port), c.peer_address,
                             static_cast<std::uint16_t>(c.peer_port)});
  }
  for (const auto& s : f.mount_stats) {
    if (s.mount_point == mount_point) e.transport_count = static_cast<unsigned>(s.transports.size());
  }
  if (const auto* i = guest::find_interface_by_mac(f.interfaces, intended_mac)) {
    if (auto n = i->combined_current()) e.guest_channels = static_cast<unsigned>(*n);
  }
  return e;
}

report::Verification verification_report(const verify::VerificationResult& r, const plan::VerifyPath& v,
                                         std::uint64_t probe_bytes, int probes) {
  report::Verification out;
  out.verdict = std::string(verify::to_string(r.verdict));
  out.summary = r.summary;
  out.direction = v.write ? "write" : "read";
  out.probe_bytes = probe_bytes;
  out.probes = probes;
  const auto dir = v.write ? verify::ProbeDirection::write : verify::ProbeDirection::read;
  for (const auto& d : r.deltas) {
    if (d.upper_device) continue;
    out.interfaces.push_back({d.name, d.mac, d.intended, d.rx_bytes, d.tx_bytes, d.net(dir), d.speed_mbps});
  }
  out.intended_share = r.intended_share;
  out.throughput = r.throughput;
  if (r.exactly_old_number) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "throughput is %.0f%% of %s's line rate (%llu Mb/s): exactly the old number?",
                  r.exactly_old_number->ratio * 100, r.exactly_old_number->interface_name.c_str(),
                  static_cast<unsigned long long>(r.exactly_old_number->speed_mbps));
    out.exactly_old_number = buf;
  }
  if (r.diagnosis) {
    std::string d = std::string(verify::to_string(r.diagnosis->kind));
    for (std::size_t i = 0; i < r.diagnosis->evidence.size(); ++i) d += (i ? "; " : ": ") + r.diagnosis->evidence[i];
    out.diagnosis = d;
    for (const auto& rem : r.diagnosis->remedies) out.remedies.push_back(rem.text);
  }
  for (const auto& e : r.failed_preconditions) out.failed_preconditions.push_back(e.to_string());
  return out;
}

// ---- one policy's run ------------------------------------------------------------------------

struct Engine::Work {
  const plan::PolicyPlan* plan = nullptr;
  report::PolicyReport* report = nullptr;
  std::optional<journal::Journal> journal;
  std::shared_ptr<journal::GuestLock> lock;
  std::size_t next = 0;                 // next step to run
  std::vector<std::size_t> touched;     // steps begun, in order: the rollback undoes them
  enum class State { active, verified, failed, conflict } state = State::active;
  std::string cause;                    // verdict that sent it to rollback
  bool rollback_ok = true;
  bool journal_ok = true;

  const plan::Step* current() const { return next < plan->steps.size() ? &plan->steps[next] : nullptr; }
  bool at(std::string_view kind) const {
    return state == State::active && current() != nullptr && current()->kind() == kind;
  }
  void fail(std::string verdict, std::string error) {
    state = State::failed;
    cause = std::move(verdict);
    if (!error.empty()) report->errors.push_back(std::move(error));
  }
  // Journal writes must succeed: a step never starts without its record on disk.
  bool begin(const plan::Step& step) {
    if (!journal) return true;
    auto st = journal->step_begin({journal::StepPhase::apply, next, step.kind(), plan->host,
                                   plan::step_to_json(step).as_object()});
    if (!st) {
      journal_ok = false;
      fail(precondition_failed, "journal: " + st.error().to_string());
      return false;
    }
    touched.push_back(next);
    return true;
  }
  void done(json::object result = {}) {
    if (journal) (void)journal->step_done(journal::StepPhase::apply, next, std::move(result));
    report->changes.push_back(plan->steps[next].summary);
    ++next;
  }
  void failed_step(const std::string& error) {
    if (journal) (void)journal->step_failed(journal::StepPhase::apply, next, error);
  }
};

void Engine::progress(std::string policy, std::string what, std::string detail, std::uint64_t done,
                      std::uint64_t total) {
  if (d_.progress) d_.progress({std::move(policy), std::move(what), std::move(detail), done, total});
}

report::RunReport Engine::new_report(std::string mode, std::string plan_id) {
  report::RunReport r;
  r.run_id = journal::make_run_id(d_.clock);
  r.plan_id = std::move(plan_id);
  r.mode = std::move(mode);
  r.started_at = journal::format_utc(d_.clock.now());
  r.policies_revision = o_.policies_revision;
  r.policies_dirty = o_.policies_dirty;
  return r;
}

report::PolicyReport Engine::new_entry(const plan::PolicyPlan& p) {
  report::PolicyReport pr;
  pr.policy = p.policy;
  pr.source = p.source;
  pr.node = p.vm.node;
  pr.vmid = p.vm.vmid;
  pr.host = p.host;
  return pr;
}

report::PolicyReport& Engine::report_of(report::RunReport& r, const plan::PolicyPlan& p) {
  for (auto& existing : r.policies) {
    if (existing.policy == p.policy) return existing;
  }
  r.policies.push_back(new_entry(p));
  return r.policies.back();
}

// Status and locks of every guest from one list call, found by vmid.
struct Engine::ListedGuests {
  proxmox::ApiResult<std::vector<proxmox::GuestSummary>> guests;
  std::map<int, const proxmox::GuestSummary*> by_vmid;
};

Engine::ListedGuests Engine::list_guests() {
  ListedGuests l{d_.api.list_guests(), {}};
  if (l.guests) {
    for (const auto& g : *l.guests) l.by_vmid.emplace(g.ref.vmid, &g);
  }
  return l;
}

std::vector<plan::Observation> Engine::observe(std::span<const policy::StoragePath> policies) {
  std::vector<const policy::StoragePath*> all;
  all.reserve(policies.size());
  for (const auto& p : policies) all.push_back(&p);
  return observe_listed(list_guests(), all);
}

std::vector<plan::Observation> Engine::observe_listed(const ListedGuests& listed,
                                                      std::span<const policy::StoragePath* const> policies) {
  std::vector<plan::Observation> out(policies.size());
  std::vector<proxmox::VmRef> vms;
  std::vector<std::string> hosts;
  std::map<proxmox::VmRef, std::size_t> vm_index;  // not a search per policy: 10,000 VMs stay cheap
  std::set<std::string_view> seen_hosts;
  std::vector<std::size_t> vm_of(policies.size());
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = *policies[i];
    proxmox::VmRef ref{p.guest.node, p.guest.vmid};
    auto [it, added] = vm_index.try_emplace(ref, vms.size());
    if (added) vms.push_back(ref);
    vm_of[i] = it->second;
    if (seen_hosts.insert(p.guest.host).second) hosts.push_back(p.guest.host);
  }
  // One config read per VM (/pending holds the values in effect, the pending ones and the
  // digest) while the guests' facts are gathered: the two wait on different machines. The facts,
  // the big part, are parsed on this thread, so every batch reuses the same heap.
  auto pendings_future = std::async(std::launch::async, [&] { return d_.api.read_pendings(vms); });
  auto facts = d_.guests.gather_facts(hosts);
  auto pendings = pendings_future.get();
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = *policies[i];
    auto& o = out[i];
    const proxmox::VmRef& ref = vms[vm_of[i]];
    auto& pending = pendings[vm_of[i]];
    if (!listed.guests) {
      o.vm_error = Error{describe(listed.guests.error()), listed.guests.error().where, {}};
    } else if (!pending) {
      o.vm_error = Error{describe(pending.error()), ref.to_string(), {}};
    } else {
      plan::ObservedVm vm;
      vm.pending = *pending;
      vm.config = config_from_pending(vm.pending);
      vm.status.ref = ref;
      if (auto g = listed.by_vmid.find(ref.vmid); g == listed.by_vmid.end()) {
        o.vm_error = Error{"VM " + std::to_string(ref.vmid) + " is not in the cluster",
                           p.position_of("spec.guest.vmid").to_string(), "check spec.guest.vmid"};
      } else {
        const auto& summary = *g->second;
        if (summary.ref.node != ref.node) {
          o.vm_error = Error{"VM " + std::to_string(ref.vmid) + " runs on node " + summary.ref.node + ", not " +
                                 ref.node,
                             p.position_of("spec.guest.node").to_string(), "fix spec.guest.node (was it migrated?)"};
        }
        if (summary.type != proxmox::GuestType::qemu) {
          o.vm_error = Error{"guest " + std::to_string(ref.vmid) + " is an LXC container, not a QEMU VM",
                             p.position_of("spec.guest.vmid").to_string(), "pathwarden manages QEMU VMs"};
        }
        vm.status.status = summary.status;
        vm.status.lock = summary.lock;
        vm.status.name = summary.name;
      }
      if (!o.vm_error) o.vm = std::move(vm);
    }
    auto fi = facts.find(p.guest.host);
    if (fi == facts.end()) {
      o.guest_error = Error{"no facts came back", p.guest.host, {}};
    } else if (!fi->second) {
      o.guest_error = fi->second.error().error;
    } else {
      o.guest = *fi->second;
    }
  }
  return out;
}

plan::PlanningContext Engine::planning_context() {
  plan::PlanningContext ctx;
  ctx.plan_id = journal::make_run_id(d_.clock) + "-" + random_hex(4);
  ctx.created_at = journal::format_utc(d_.clock.now());
  const auto t = std::chrono::system_clock::to_time_t(d_.clock.now());
  std::tm local{};
  localtime_r(&t, &local);
  ctx.weekday = local.tm_wday;
  ctx.minute_of_day = local.tm_hour * 60 + local.tm_min;
  ctx.backup_dir = o_.backup_dir;
  return ctx;
}

plan::Plan Engine::make_plan(std::span<const policy::StoragePath> policies,
                             std::span<const plan::Observation> observed) {
  auto plan = plan::make_plan(policies, observed, planning_context());
  plan.policies_revision = o_.policies_revision;
  plan.policies_dirty = o_.policies_dirty;
  return plan;
}

void Engine::observe_and_plan(std::span<const policy::StoragePath> policies, const plan::PlanningContext& ctx,
                              const PlanSink& take) {
  // Whole guests per batch, in the order they first appear: a guest's facts are gathered once.
  std::vector<std::vector<std::size_t>> by_host;
  std::map<std::string_view, std::size_t> host_slot;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    auto [it, added] = host_slot.try_emplace(policies[i].guest.host, by_host.size());
    if (added) by_host.emplace_back();
    by_host[it->second].push_back(i);
  }
  host_slot.clear();
  const auto listed = list_guests();
  const std::size_t per_batch = std::max<std::size_t>(1, o_.observe_batch);
  for (std::size_t first = 0; first < by_host.size(); first += per_batch) {
    std::vector<std::size_t> indices;
    for (std::size_t h = first; h < std::min(by_host.size(), first + per_batch); ++h) {
      indices.insert(indices.end(), by_host[h].begin(), by_host[h].end());
    }
    std::vector<const policy::StoragePath*> batch;
    batch.reserve(indices.size());
    for (auto i : indices) batch.push_back(&policies[i]);
    auto observed = observe_listed(listed, batch);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      take(indices[k], plan::plan_policy(*batch[k], observed[k], ctx));
      observed[k] = {};  // the facts of a guest are the big part: drop them as soon as planned
    }
  }
}

plan::Plan Engine::observe_and_plan(std::span<const policy::StoragePath> policies) {
  const auto ctx = planning_context();
  std::vector<std::optional<plan::PolicyPlan>> slots(policies.size());
  observe_and_plan(policies, ctx, [&](std::size_t i, plan::PolicyPlan&& p) { slots[i] = std::move(p); });
  plan::Plan plan;
  plan.id = ctx.plan_id;
  plan.created_at = ctx.created_at;
  plan.policies_revision = o_.policies_revision;
  plan.policies_dirty = o_.policies_dirty;
  plan.policies.reserve(slots.size());
  for (auto& s : slots) plan.policies.push_back(std::move(*s));
  return plan;
}

// ---- apply ---------------------------------------------------------------------------------

void Engine::execute(const plan::Plan& plan, report::RunReport& rep, std::vector<std::string>* conflicted) {
  std::vector<std::unique_ptr<Work>> works;
  std::map<std::string, std::shared_ptr<journal::GuestLock>> locks;
  // Every report entry exists before any is referenced: the vector must not move under the works.
  rep.policies.reserve(rep.policies.size() + plan.policies.size());
  std::map<std::string, std::size_t, std::less<>> entry;  // policy → its report entry, without a search each
  for (std::size_t i = 0; i < rep.policies.size(); ++i) entry.emplace(rep.policies[i].policy, i);
  for (const auto& p : plan.policies) {
    if (entry.try_emplace(p.policy, rep.policies.size()).second) rep.policies.push_back(new_entry(p));
  }
  for (const auto& p : plan.policies) {
    auto& pr = rep.policies[entry.find(p.policy)->second];
    for (const auto& s : p.steps) pr.planned.push_back(s.summary);
    pr.warnings.insert(pr.warnings.end(), p.warnings.begin(), p.warnings.end());
    pr.notes.insert(pr.notes.end(), p.notes.begin(), p.notes.end());
    if (p.state == plan::PolicyState::converged) {
      pr.verdict = converged;
      continue;
    }
    if (p.state == plan::PolicyState::precondition_failed) {
      pr.verdict = precondition_failed;
      pr.errors.insert(pr.errors.end(), p.blockers.begin(), p.blockers.end());
      continue;
    }
    auto w = std::make_unique<Work>();
    w->plan = &p;
    w->report = &pr;
    auto& lock = locks[p.host];
    if (!lock) {
      auto l = d_.locks.lock(p.host);
      if (!l) {
        pr.verdict = precondition_failed;
        pr.errors.push_back(l.error().to_string());
        locks.erase(p.host);
        continue;
      }
      lock = std::move(*l);
    }
    w->lock = lock;
    json::object info{{"policy", p.policy}, {"plan_id", plan.id}, {"run_id", rep.run_id},
                      {"policy_plan", plan::to_json(plan::Plan{plan.id, plan.created_at, plan.policies_revision,
                                                               plan.policies_dirty, {p}})}};
    // One journal per policy and plan: a re-planned round gets its own.
    auto j = journal::Journal::start(d_.journals, d_.clock, plan.id + "." + p.policy, plan.id, std::move(info));
    if (!j) {
      pr.verdict = precondition_failed;
      pr.errors.push_back("journal: " + j.error().to_string());
      continue;
    }
    w->journal.emplace(std::move(*j));
    works.push_back(std::move(w));
  }

  std::vector<Work*> active;
  for (auto& w : works) active.push_back(w.get());
  for (auto kind : kPhaseOrder) run_phase(kind, active);

  std::vector<Work*> to_undo;
  for (auto* w : active) {
    if (w->state == Work::State::failed || w->state == Work::State::conflict) to_undo.push_back(w);
  }
  if (!to_undo.empty()) roll_back(to_undo);
  for (auto* w : active) {
    if (w->state == Work::State::conflict && w->rollback_ok && conflicted != nullptr) {
      conflicted->push_back(w->plan->policy);
      w->report->notes.push_back("reality moved while applying: re-observed and re-planned");
    }
    finish(*w);
    if (!w->rollback_ok) rep.journal_left = true;
  }
}

void Engine::run_phase(std::string_view kind, std::vector<Work*>& works) {
  std::vector<Work*> batch;
  for (auto* w : works) {
    if (w->at(kind)) batch.push_back(w);
  }
  if (batch.empty()) return;
  if (kind == "set-nic") {
    for (auto* w : batch) run_set_nic(*w);
  } else if (kind == "restart-vm") {
    run_restart(batch);
  } else if (kind == "set-channels") {
    run_channels(batch, false);
  } else if (kind == "change-fstab") {
    run_fstab(batch);
  } else if (kind == "verify") {
    run_verify(batch);
  }
}

void Engine::run_set_nic(Work& w) {
  const auto& step = *w.current();
  const auto& s = std::get<plan::SetNic>(step.action);
  if (!w.begin(step)) return;
  auto spec = proxmox::NetDeviceSpec::parse(s.to);
  if (!spec) {
    w.failed_step(spec.error().to_string());
    w.fail(precondition_failed, spec.error().to_string());
    return;
  }
  progress(w.plan->policy, "proxmox", "setting " + s.device + " " + (s.hotplug ? "(hot-plug)" : "(pending)"));
  auto r = d_.api.update_nic(s.vm, s.device, *spec, s.digest);
  if (r && r->has_value()) {
    auto task = d_.api.wait_task(**r, o_.task_wait);
    if (!task) r = std::unexpected(task.error());
  }
  if (!r) {
    const auto& e = r.error();
    if (e.kind == proxmox::ApiErrorKind::digest_conflict) {
      // Proxmox refused before writing: nothing to undo for this step.
      w.failed_step(std::string(kRefused) + describe(e));
      w.touched.pop_back();
      w.state = Work::State::conflict;
      w.report->notes.push_back("Proxmox config of VM " + std::to_string(s.vm.vmid) +
                                " changed since it was read (digest mismatch): not overwritten");
    } else {
      w.failed_step(describe(e));
      // A failed hot-plug leaves the new value pending: the rollback's inverse clears it.
      w.fail(precondition_failed, "setting " + s.device + ": " + describe(e));
    }
    return;
  }
  w.done();
  if (s.hotplug) {
    // The NIC was unplugged and plugged again: wait until the guest shows it by MAC.
    const auto deadline = std::chrono::steady_clock::now() + o_.interface_return_timeout;
    const std::array<std::string, 1> hosts{w.plan->host};
    for (;;) {
      auto facts = d_.guests.gather_facts(hosts);
      auto it = facts.find(w.plan->host);
      if (it != facts.end() && it->second) {
        const auto* i = guest::find_interface_by_mac(it->second->interfaces, proxmox::NetDeviceSpec::parse(s.to)->mac().value_or(""));
        if (i == nullptr) {
          auto lower = *proxmox::NetDeviceSpec::parse(s.to)->mac();
          std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
          i = guest::find_interface_by_mac(it->second->interfaces, lower);
        }
        if (i != nullptr && i->operstate != "down") break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        w.fail(precondition_failed, s.device + " did not come back in the guest after the hot-plug within " +
                                        std::to_string(o_.interface_return_timeout.count()) + " s");
        return;
      }
      d_.sleeper.sleep(std::chrono::seconds(2));
    }
  }
}

void Engine::run_restart(std::vector<Work*>& batch) {
  std::vector<std::string> hosts;
  std::vector<Work*> restarted;
  for (auto* w : batch) {
    const auto& step = *w->current();
    const auto& s = std::get<plan::RestartVm>(step.action);
    if (!w->begin(step)) continue;
    progress(w->plan->policy, "restart", "rebooting VM " + std::to_string(s.vm.vmid) + " through Proxmox");
    auto r = d_.api.reboot_and_wait(s.vm, o_.task_wait);
    if (!r) {
      w->failed_step(describe(r.error()));
      w->fail(precondition_failed, "rebooting VM " + std::to_string(s.vm.vmid) + ": " + describe(r.error()));
      continue;
    }
    hosts.push_back(s.host);
    restarted.push_back(w);
  }
  if (restarted.empty()) return;
  auto back = d_.guests.wait_reachable(hosts, o_.guest_return_timeout);
  for (auto* w : restarted) {
    auto it = back.find(w->plan->host);
    if (it == back.end() || !it->second) {
      const std::string why = it == back.end() ? "no answer" : describe(it->second.error());
      w->failed_step(why);
      w->fail(precondition_failed, "guest " + w->plan->host + " did not come back after the restart: " + why);
      continue;
    }
    w->done();
  }
}

void Engine::run_channels(std::vector<Work*>& batch, bool) {
  std::vector<ansible::ChannelsRequest> requests;
  std::vector<Work*> started;
  for (auto* w : batch) {
    const auto& step = *w->current();
    const auto& s = std::get<plan::SetChannels>(step.action);
    if (!w->begin(step)) continue;
    requests.push_back({s.host, s.interface, s.to});
    started.push_back(w);
  }
  auto results = d_.guests.set_channels(requests);
  for (auto* w : started) {
    auto it = results.find(w->plan->host);
    if (it == results.end() || !it->second) {
      const std::string why = it == results.end() ? "no result" : describe(it->second.error());
      w->failed_step(why);
      w->fail(precondition_failed, "setting channels: " + why);
      continue;
    }
    w->done();
  }
}

void Engine::run_fstab(std::vector<Work*>& batch) {
  std::vector<ansible::FstabChange> changes;
  std::vector<Work*> started;
  for (auto* w : batch) {
    const auto& step = *w->current();
    const auto& s = std::get<plan::ChangeFstab>(step.action);
    if (!w->begin(step)) continue;
    changes.push_back({s.host, s.old_sha256, s.new_content, s.backup_path, s.activations});
    started.push_back(w);
  }
  progress("", "guest", "writing fstab and re-making mounts on " + std::to_string(changes.size()) + " guest(s)");
  auto results = d_.guests.apply_fstab(changes);
  for (auto* w : started) {
    auto it = results.find(w->plan->host);
    if (it == results.end() || !it->second) {
      const std::string why = it == results.end() ? "no result" : describe(it->second.error());
      if (it != results.end() && it->second.error().kind == GuestFailure::Kind::conflict) {
        // The compare-and-swap refused before writing anything: nothing to undo for this step.
        w->failed_step(std::string(kRefused) + why);
        w->touched.pop_back();
        w->state = Work::State::conflict;
        w->report->notes.push_back("the fstab of " + w->plan->host + " changed since it was observed: not overwritten");
      } else {
        w->failed_step(why);
        w->fail(precondition_failed, "applying the fstab change: " + why);
      }
      continue;
    }
    w->done();
  }
}

void Engine::run_verify(std::vector<Work*>& batch) {
  struct Measuring {
    Work* w;
    const plan::VerifyPath* v;
    std::uint64_t bytes;
    int probes = 0;
    std::optional<verify::VerificationResult> result;
    bool finished = false;
  };
  std::vector<Measuring> m;
  for (auto* w : batch) {
    const auto& step = *w->current();
    if (!w->begin(step)) continue;
    const auto& v = std::get<plan::VerifyPath>(step.action);
    m.push_back({w, &v, v.probe_bytes, 0, std::nullopt, false});
  }
  for (int round = 0; round < o_.max_measurements; ++round) {
    std::vector<ProbeSpec> probes;
    for (auto& x : m) {
      if (x.finished) continue;
      probes.push_back({x.v->host, x.v->probe_file, x.bytes,
                        x.v->write ? verify::ProbeDirection::write : verify::ProbeDirection::read,
                        std::chrono::milliseconds(x.v->baseline_ms)});
      progress(x.w->plan->policy, "probe", "probing " + x.v->probe_file, 0, x.bytes);
    }
    if (probes.empty()) break;
    auto outcomes = d_.guests.probe(probes);
    for (auto& x : m) {
      if (x.finished) continue;
      ++x.probes;
      auto it = outcomes.find(x.v->host);
      if (it == outcomes.end() || !it->second) {
        const std::string why = it == outcomes.end() ? "no result" : describe(it->second.error());
        x.w->report->errors.push_back("probe: " + why);
        verify::VerificationResult r;
        r.verdict = verify::Verdict::inconclusive;
        r.summary = "the probe failed: " + why;
        x.result = r;
        x.finished = true;
        continue;
      }
      const auto& out = *it->second;
      verify::VerificationInput in;
      in.desired = desired_from(*x.v);
      in.evidence = evidence_from(out.after, x.v->mount_point, x.v->intended_mac);
      in.measurement = verify::Measurement{out.samples, out.run};
      in.interfaces = out.samples.after_probe;
      in.settings.min_share = x.v->min_share;
      in.settings.max_probe_bytes = x.v->max_probe_bytes;
      x.result = verify::verify_path(in);
      const auto& advice = x.result->advice;
      if (advice.next == verify::NextStep::grow_probe && advice.probe_bytes > x.bytes &&
          x.bytes < x.v->max_probe_bytes) {
        x.bytes = std::min(advice.probe_bytes, x.v->max_probe_bytes);
        x.w->report->notes.push_back("probe grown: " + advice.reason);
      } else if (advice.next == verify::NextStep::remeasure) {
        x.w->report->notes.push_back("measured again: " + advice.reason);
      } else {
        x.finished = true;
      }
    }
  }
  for (auto& x : m) {
    auto& w = *x.w;
    if (!x.result) continue;
    w.report->verification = verification_report(*x.result, *x.v, x.bytes, x.probes);
    const auto v = x.result->verdict;
    json::object result{{"verdict", std::string(verify::to_string(v))}, {"summary", x.result->summary}};
    if (w.journal) (void)w.journal->step_done(journal::StepPhase::apply, w.next, std::move(result));
    ++w.next;
    if (v == verify::Verdict::verified) {
      w.state = Work::State::verified;
    } else if (v == verify::Verdict::inconclusive && !x.v->rollback_on_inconclusive) {
      w.state = Work::State::verified;  // kept by the policy's choice; reported as inconclusive
      w.cause = inconclusive;
    } else {
      w.fail(std::string(verify::to_string(v)), {});
    }
  }
}

void Engine::finish(Work& w) {
  auto& pr = *w.report;
  if (!w.rollback_ok) {
    pr.verdict = rollback_failed;
  } else if (w.state == Work::State::verified) {
    pr.verdict = w.cause.empty() ? report::verdict::verified : w.cause;
  } else if (w.state == Work::State::conflict) {
    pr.verdict = precondition_failed;  // replaced by the next round's outcome when re-planned
  } else if (!w.touched.empty()) {
    pr.verdict = rolled_back;
    pr.cause = w.cause;
    pr.changes.clear();
  } else {
    pr.verdict = w.cause.empty() ? precondition_failed : w.cause;
  }
  if (w.journal && w.rollback_ok && w.journal_ok) {
    (void)w.journal->run_finished(json::object{{"policy", pr.policy}, {"verdict", pr.verdict}});
  }
  if (w.journal && !w.rollback_ok) {
    pr.errors.push_back("journal " + w.journal->describe() + " left for 'pathwarden recover'");
  }
}

}  // namespace pw::reconcile

namespace pw::reconcile {
namespace {

std::string lower_mac(std::string mac) {
  std::transform(mac.begin(), mac.end(), mac.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return mac;
}

// Whether a rollback of this plan ends by checking the old state is back (the policy may opt out).
bool checks_restored_state(const plan::PolicyPlan& p) {
  for (const auto& s : p.steps) {
    if (const auto* v = std::get_if<plan::VerifyPath>(&s.action)) return v->verify_restored;
  }
  return true;
}

}  // namespace

// ---- rollback ------------------------------------------------------------------------------

// Undoes, in reverse order, every step a work began (a step that failed half-way may have
// taken effect: each inverse first checks what is really there, so it is safe either way).
void Engine::roll_back(std::vector<Work*>& batch) {
  for (auto* w : batch) {
    if (w->journal) (void)w->journal->rollback_begin(w->cause.empty() ? "conflict" : w->cause);
  }
  // Inverses run kind by kind across guests, in reverse phase order.
  for (auto kind_it = kPhaseOrder.rbegin(); kind_it != kPhaseOrder.rend(); ++kind_it) {
    const std::string_view kind = *kind_it;
    std::vector<std::pair<Work*, std::size_t>> todo;
    for (auto* w : batch) {
      for (auto it = w->touched.rbegin(); it != w->touched.rend(); ++it) {
        if (w->plan->steps[*it].kind() == kind) todo.emplace_back(w, *it);
      }
    }
    if (todo.empty()) continue;
    auto begin = [&](Work& w, std::size_t idx) {
      if (w.journal) {
        (void)w.journal->step_begin({journal::StepPhase::rollback, idx, std::string(kind), w.plan->host,
                                     plan::step_to_json(w.plan->steps[idx]).as_object()});
      }
    };
    auto end = [&](Work& w, std::size_t idx, const std::optional<std::string>& error) {
      if (error) {
        w.rollback_ok = false;
        w.report->errors.push_back("rollback of '" + w.plan->steps[idx].summary + "': " + *error);
        if (w.journal) (void)w.journal->step_failed(journal::StepPhase::rollback, idx, *error);
      } else {
        w.report->rolled_back.push_back(w.plan->steps[idx].summary);
        if (w.journal) (void)w.journal->step_done(journal::StepPhase::rollback, idx);
      }
    };
    if (kind == "change-fstab") {
      std::vector<ansible::FstabRestore> restores;
      for (auto& [w, idx] : todo) {
        begin(*w, idx);
        const auto& s = std::get<plan::ChangeFstab>(w->plan->steps[idx].action);
        restores.push_back({s.host, s.backup_path, s.old_sha256, s.new_sha256, s.inverse_activations});
      }
      auto results = d_.guests.restore_fstab(restores);
      for (auto& [w, idx] : todo) {
        auto it = results.find(w->plan->host);
        end(*w, idx, it == results.end() ? std::optional<std::string>("no result")
                     : it->second ? std::nullopt
                                  : std::optional<std::string>(describe(it->second.error())));
      }
    } else if (kind == "set-channels") {
      // Only where the count moved: a failed `ethtool -L` changed nothing, and setting an
      // unchanged count again fails on NICs without combined channels and on older ethtool.
      std::vector<std::string> hosts;
      for (auto& [w, idx] : todo) hosts.push_back(w->plan->host);
      auto facts = d_.guests.gather_facts(hosts);
      std::vector<ansible::ChannelsRequest> requests;
      std::vector<std::pair<Work*, std::size_t>> resetting;
      for (auto& [w, idx] : todo) {
        begin(*w, idx);
        const auto& s = std::get<plan::SetChannels>(w->plan->steps[idx].action);
        const auto f = facts.find(w->plan->host);
        const auto* i = f != facts.end() && f->second
                            ? guest::find_interface_by_mac(f->second->interfaces, lower_mac(s.mac))
                            : nullptr;
        if (i != nullptr && i->combined_current().value_or(s.from) == s.from) {
          end(*w, idx, std::nullopt);
          continue;
        }
        requests.push_back({s.host, s.interface, s.from});
        resetting.emplace_back(w, idx);
      }
      if (!requests.empty()) {
        auto results = d_.guests.set_channels(requests);
        for (auto& [w, idx] : resetting) {
          auto it = results.find(w->plan->host);
          end(*w, idx, it == results.end() ? std::optional<std::string>("no result")
                       : it->second ? std::nullopt
                                    : std::optional<std::string>(describe(it->second.error())));
        }
      }
    } else if (kind == "set-nic") {
      for (auto& [w, idx] : todo) {
        begin(*w, idx);
        const auto& s = std::get<plan::SetNic>(w->plan->steps[idx].action);
        const bool restarted = std::any_of(w->touched.begin(), w->touched.end(),
                                           [&](std::size_t i) { return w->plan->steps[i].kind() == "restart-vm"; });
        end(*w, idx, revert_nic(s, restarted, w->plan->host));
      }
    }
    // restart-vm has no inverse of its own: reverting the NIC restarts again when it must.
  }
  // The restored state of every guest in one facts run, never one per guest.
  std::vector<std::string> hosts;
  for (auto* w : batch) {
    if (w->rollback_ok && checks_restored_state(*w->plan)) hosts.push_back(w->plan->host);
  }
  std::map<std::string, GuestResult<guest::GuestFacts>> restored;
  if (!hosts.empty()) restored = d_.guests.gather_facts(hosts);
  for (auto* w : batch) {
    if (w->rollback_ok && checks_restored_state(*w->plan)) check_restored(*w, restored);
    if (w->journal) (void)w->journal->rollback_done(w->rollback_ok, w->rollback_ok ? "" : "see errors");
  }
}

std::optional<std::string> Engine::revert_nic(const plan::SetNic& s, bool restart_if_pending, const std::string& host) {
  // Our own write changed the digest; re-read, check the value is still ours, write it back.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto pending = d_.api.read_pending(s.vm);
    if (!pending) return describe(pending.error());
    const auto* item = pending->find(s.device);
    const std::string in_effect = item && item->value ? *item->value : "";
    const std::optional<std::string> waiting = item ? item->pending : std::nullopt;
    auto same = [](const std::string& a, const std::string& b) {
      auto pa = proxmox::NetDeviceSpec::parse(a);
      auto pb = proxmox::NetDeviceSpec::parse(b);
      return pa && pb ? pa->canonical() == pb->canonical() : a == b;
    };
    if (same(in_effect, s.from) && !waiting) return std::nullopt;  // nothing of ours is left
    const bool ours = same(in_effect, s.to) || (waiting && same(*waiting, s.to));
    if (!ours) {
      return s.device + " was changed by someone else since (now '" + in_effect +
             (waiting ? "', pending '" + *waiting : std::string()) + "'); not overwriting it";
    }
    auto spec = proxmox::NetDeviceSpec::parse(s.from);
    if (!spec) return spec.error().to_string();
    auto r = d_.api.update_nic(s.vm, s.device, *spec, pending->digest);
    if (!r) {
      if (r.error().kind == proxmox::ApiErrorKind::digest_conflict) continue;
      return describe(r.error());
    }
    // The old value may now wait for a restart (hot-plug off): the forward change needed one too.
    auto after = d_.api.read_pending(s.vm);
    if (!after) return describe(after.error());
    const auto* again = after->find(s.device);
    if (again && again->pending) {
      if (!restart_if_pending) return s.device + " is back to its old value but only pending until the next restart";
      auto rb = d_.api.reboot_and_wait(s.vm, o_.task_wait);
      if (!rb) return "restart to apply the old " + s.device + ": " + describe(rb.error());
      const std::array<std::string, 1> hosts{host};
      auto back = d_.guests.wait_reachable(hosts, o_.guest_return_timeout);
      if (auto it = back.find(host); it == back.end() || !it->second) {
        return "guest " + host + " did not come back after the restart";
      }
    }
    return std::nullopt;
  }
  return s.device + ": the config kept changing while rolling back (digest conflicts)";
}

// After a rollback: is everything as it was before the run?
void Engine::check_restored(Work& w, const std::map<std::string, GuestResult<guest::GuestFacts>>& facts) {
  auto it = facts.find(w.plan->host);
  if (it == facts.end() || !it->second) {
    w.rollback_ok = false;
    w.report->errors.push_back("could not read the guest back after the rollback");
    return;
  }
  const auto& f = *it->second;
  auto problem = [&](std::string what) {
    w.rollback_ok = false;
    w.report->errors.push_back("not restored: " + what);
  };
  for (auto idx : w.touched) {
    const auto& step = w.plan->steps[idx];
    if (const auto* fs = std::get_if<plan::ChangeFstab>(&step.action)) {
      const auto hash = f.fstab_sha256.empty() ? guest::sha256_hex(f.fstab_content) : f.fstab_sha256;
      if (hash == fs->old_sha256) {
        w.report->restored_checks.push_back("/etc/fstab is byte-identical to before (sha256 " + hash.substr(0, 12) + ")");
      } else {
        problem("/etc/fstab differs from before the run");
      }
      for (const auto& a : fs->inverse_activations) {
        const guest::MountInfo* m = nullptr;
        for (const auto& mi : f.mounts) {
          if (mi.mount_point == a.path) m = &mi;
        }
        if (!a.mount) {
          if (m == nullptr) w.report->restored_checks.push_back(a.path + " is unmounted again, as before");
          else problem(a.path + " is still mounted");
        } else if (m == nullptr) {
          problem(a.path + " is not mounted again");
        } else {
          w.report->restored_checks.push_back(a.path + " is mounted again from " + m->device + " (vers=" +
                                              m->nfs_version() + ", addr=" + m->server_address() + ")");
        }
      }
    } else if (const auto* ch = std::get_if<plan::SetChannels>(&step.action)) {
      const auto* i = guest::find_interface_by_mac(f.interfaces, lower_mac(ch->mac));
      if (i != nullptr && i->combined_current() == ch->from) {
        w.report->restored_checks.push_back(i->name + " runs " + std::to_string(ch->from) + " channels again");
      } else if (i != nullptr && i->combined_current()) {
        problem(i->name + " runs " + std::to_string(*i->combined_current()) + " channels, not " +
                std::to_string(ch->from));
      }
    } else if (const auto* nic = std::get_if<plan::SetNic>(&step.action)) {
      auto pending = d_.api.read_pending(nic->vm);
      if (!pending) {
        problem("cannot read VM " + std::to_string(nic->vm.vmid) + " back: " + describe(pending.error()));
        continue;
      }
      const auto* item = pending->find(nic->device);
      auto now = item && item->value ? proxmox::NetDeviceSpec::parse(*item->value) : Result<proxmox::NetDeviceSpec>(
                                                                                         std::unexpected(Error{}));
      auto was = proxmox::NetDeviceSpec::parse(nic->from);
      if (now && was && now->canonical() == was->canonical() && !(item && item->pending)) {
        w.report->restored_checks.push_back("Proxmox " + nic->device + " is '" + nic->from + "' again");
      } else {
        problem("Proxmox " + nic->device + " is not back to '" + nic->from + "'");
      }
    }
  }
}

// ---- results -------------------------------------------------------------------------------

void Engine::remember_results(const report::RunReport& r) {
  for (const auto& p : r.policies) {
    journal::PolicyResult res;
    res.policy = p.policy;
    res.verdict = p.verdict;
    res.finished_at = r.finished_at;
    res.run_id = r.run_id;
    report::RunReport single;
    single.policies.push_back(p);
    res.details = report::to_json(single).as_object()["policies"].as_array()[0].as_object();
    if (auto st = journal::record_result(d_.results, res); !st) {
      // The run's outcome stands; only `status` will not show it.
      progress(p.policy, "warning", "could not store the result: " + st.error().to_string());
    }
  }
}

// ---- commands ------------------------------------------------------------------------------

report::RunReport Engine::reconcile(std::span<const policy::StoragePath> all, bool check_only) {
  auto rep = new_report(check_only ? "check" : "reconcile", "");
  std::span<const policy::StoragePath> remaining = all;
  std::vector<policy::StoragePath> retry;  // after a conflict, only those policies (never a copy of all)
  std::map<std::string, std::vector<std::string>> carried;  // notes of rounds that hit a conflict
  for (int round = 1; round <= o_.max_rounds && !remaining.empty(); ++round) {
    if (check_only) {
      // Only the report is kept: a 10,000-VM check never holds every plan at once.
      const auto ctx = planning_context();
      rep.plan_id = ctx.plan_id;
      rep.policies.resize(remaining.size());
      observe_and_plan(remaining, ctx, [&](std::size_t i, plan::PolicyPlan&& p) {
        auto& pr = rep.policies[i];
        pr = new_entry(p);
        for (auto& s : p.steps) pr.planned.push_back(std::move(s.summary));
        pr.warnings = std::move(p.warnings);
        pr.notes = std::move(p.notes);
        pr.errors = std::move(p.blockers);
        pr.verdict = p.state == plan::PolicyState::converged   ? converged
                     : p.state == plan::PolicyState::changes   ? drift
                                                               : precondition_failed;
      });
      remaining = {};  // checked, all of them: none is left over from a conflict
      break;
    }
    auto plan = observe_and_plan(remaining);
    if (rep.plan_id.empty()) rep.plan_id = plan.id;
    std::vector<std::string> conflicted;
    execute(plan, rep, &conflicted);
    std::vector<policy::StoragePath> next;
    for (const auto& p : remaining) {
      if (std::find(conflicted.begin(), conflicted.end(), p.name) != conflicted.end()) next.push_back(p);
    }
    retry = std::move(next);
    remaining = retry;
    if (!remaining.empty() && round < o_.max_rounds) {
      // Requeue with backoff, as controller-runtime does on a conflict.
      d_.sleeper.sleep(o_.requeue_backoff * (1 << (round - 1)));
      for (const auto& p : remaining) {
        auto it = std::find_if(rep.policies.begin(), rep.policies.end(), [&](const auto& r) { return r.policy == p.name; });
        if (it != rep.policies.end()) {
          carried[p.name] = std::move(it->notes);
          rep.policies.erase(it);
        }
      }
    }
  }
  for (auto& pr : rep.policies) {
    if (auto c = carried.find(pr.policy); c != carried.end()) pr.notes.insert(pr.notes.begin(), c->second.begin(), c->second.end());
  }
  for (const auto& p : remaining) {
    for (auto& pr : rep.policies) {
      if (pr.policy == p.name) {
        pr.errors.push_back("reality kept changing during " + std::to_string(o_.max_rounds) +
                            " attempts (concurrent edits?); try again later");
      }
    }
  }
  rep.finished_at = journal::format_utc(d_.clock.now());
  if (!check_only) remember_results(rep);
  return rep;
}

report::RunReport Engine::apply(const plan::Plan& plan) {
  auto rep = new_report("apply", plan.id);
  rep.policies_revision = plan.policies_revision;
  rep.policies_dirty = plan.policies_dirty;
  // Apply never re-decides: it only checks that what the plan was made from still holds.
  std::vector<proxmox::VmRef> vms;
  std::vector<std::string> hosts;
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) vms.push_back(nic->vm);
      if (std::holds_alternative<plan::ChangeFstab>(s.action)) hosts.push_back(p.host);
    }
  }
  auto pendings = d_.api.read_pendings(vms);
  auto facts = d_.guests.gather_facts(hosts);
  std::vector<std::string> moved;
  std::size_t vi = 0;
  for (const auto& p : plan.policies) {
    for (const auto& s : p.steps) {
      if (const auto* nic = std::get_if<plan::SetNic>(&s.action)) {
        const auto& r = pendings[vi++];
        if (!r) moved.push_back(p.policy + ": cannot read VM " + std::to_string(nic->vm.vmid) + ": " + describe(r.error()));
        else if (r->digest != nic->digest) moved.push_back(p.policy + ": the Proxmox config of VM " +
                                                           std::to_string(nic->vm.vmid) + " changed since the plan");
      }
      if (const auto* fs = std::get_if<plan::ChangeFstab>(&s.action)) {
        auto it = facts.find(p.host);
        if (it == facts.end() || !it->second) {
          moved.push_back(p.policy + ": cannot read the fstab of " + p.host);
        } else {
          const auto hash = it->second->fstab_sha256.empty() ? guest::sha256_hex(it->second->fstab_content)
                                                             : it->second->fstab_sha256;
          if (hash != fs->old_sha256) moved.push_back(p.policy + ": the fstab of " + p.host + " changed since the plan");
        }
      }
    }
  }
  if (!moved.empty()) {
    for (const auto& p : plan.policies) {
      auto& pr = report_of(rep, p);
      pr.verdict = precondition_failed;
      for (const auto& m : moved) {
        if (m.starts_with(p.policy + ":")) pr.errors.push_back(m.substr(p.policy.size() + 2) + "; run 'pathwarden plan' again");
      }
      if (pr.errors.empty()) pr.errors.push_back("not applied: the plan is stale for other policies; run 'pathwarden plan' again");
    }
    rep.finished_at = journal::format_utc(d_.clock.now());
    return rep;
  }
  execute(plan, rep, nullptr);
  rep.finished_at = journal::format_utc(d_.clock.now());
  remember_results(rep);
  return rep;
}

report::RunReport Engine::verify(std::span<const policy::StoragePath> policies, bool probe) {
  auto rep = new_report("verify", "");
  auto observed = observe(policies);
  std::vector<ProbeSpec> probes;
  std::vector<std::optional<plan::VerifyPath>> paths(policies.size());
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto& p = policies[i];
    plan::PolicyPlan pp;
    pp.policy = p.name;
    pp.source = p.source.to_string();
    pp.vm = {p.guest.node, p.guest.vmid};
    pp.host = p.guest.host;
    auto& pr = report_of(rep, pp);
    const auto& o = observed[i];
    if (o.vm_error || o.guest_error || !o.vm || !o.guest) {
      pr.verdict = precondition_failed;
      if (o.vm_error) pr.errors.push_back(o.vm_error->to_string());
      if (o.guest_error) pr.errors.push_back(o.guest_error->to_string());
      continue;
    }
    auto nic = o.vm->config.get(p.nic.device);
    auto spec = nic ? proxmox::NetDeviceSpec::parse(*nic) : Result<proxmox::NetDeviceSpec>(std::unexpected(Error{}));
    if (!spec || !spec->mac()) {
      pr.verdict = precondition_failed;
      pr.errors.push_back("VM " + std::to_string(p.guest.vmid) + " has no usable " + p.nic.device);
      continue;
    }
    plan::VerifyPath v;
    v.host = p.guest.host;
    v.mount_point = p.mount.path;
    v.intended_mac = lower_mac(*spec->mac());
    v.server = p.mount.server;
    v.nas_addresses = p.mount.nas_addresses;
    v.vers = p.mount.nfs_version();
    v.nconnect = p.mount.nconnect();
    v.queues = p.nic.queues;
    v.probe_file = p.mount.path + "/" + p.verify.probe_file;
    v.probe_bytes = p.verify.probe_bytes;
    v.max_probe_bytes = p.verify.max_probe_bytes;
    v.min_share = p.verify.min_share;
    v.write = p.verify.direction == policy::ProbeDirection::write;
    v.baseline_ms = static_cast<int>(p.verify.baseline.count());
    if (probe) {
      probes.push_back({v.host, v.probe_file, v.probe_bytes,
                        v.write ? verify::ProbeDirection::write : verify::ProbeDirection::read,
                        std::chrono::milliseconds(v.baseline_ms)});
    } else {
      verify::VerificationInput in;
      in.desired = desired_from(v);
      in.evidence = evidence_from(*o.guest, v.mount_point, v.intended_mac);
      in.interfaces = snapshot_from(*o.guest);
      in.settings.min_share = v.min_share;
      auto r = verify::verify_path(in);
      pr.verification = verification_report(r, v, 0, 0);
      pr.verdict = std::string(verify::to_string(r.verdict));
    }
    paths[i] = v;
  }
  if (probe && !probes.empty()) {
    auto outcomes = d_.guests.probe(probes);
    for (std::size_t i = 0; i < policies.size(); ++i) {
      if (!paths[i]) continue;
      auto& pr = rep.policies[i];
      auto it = outcomes.find(paths[i]->host);
      if (it == outcomes.end() || !it->second) {
        pr.verdict = inconclusive;
        pr.errors.push_back("probe: " + (it == outcomes.end() ? std::string("no result") : describe(it->second.error())));
        continue;
      }
      verify::VerificationInput in;
      in.desired = desired_from(*paths[i]);
      in.evidence = evidence_from(it->second->after, paths[i]->mount_point, paths[i]->intended_mac);
      in.measurement = verify::Measurement{it->second->samples, it->second->run};
      in.interfaces = it->second->samples.after_probe;
      in.settings.min_share = paths[i]->min_share;
      auto r = verify::verify_path(in);
      pr.verification = verification_report(r, *paths[i], paths[i]->probe_bytes, 1);
      pr.verdict = std::string(verify::to_string(r.verdict));
    }
  }
  rep.finished_at = journal::format_utc(d_.clock.now());
  // An audit is evidence too: `status` shows it.
  remember_results(rep);
  return rep;
}

}  // namespace pw::reconcile

namespace pw::reconcile {

report::RunReport Engine::recover() {
  auto rep = new_report("recover", "");
  auto scan = journal::scan_journals(d_.journals);
  for (const auto& bad : scan.unreadable) {
    report::PolicyReport pr;
    pr.policy = "(journal)";
    pr.verdict = rollback_failed;
    pr.errors.push_back(bad.to_string() + "; inspect it by hand, then remove it");
    rep.policies.push_back(std::move(pr));
    rep.journal_left = true;
  }
  std::vector<plan::Plan> plans;
  plans.reserve(scan.interrupted.size());
  for (const auto& run : scan.interrupted) {
    if (run.steps.empty() && run.rollback_steps.empty() && !run.info.contains("policy_plan")) {
      // Killed while writing its very first record: the run never started anything.
      if (auto st = d_.journals.remove(run.run_id); !st) {
        rep.journal_left = true;
        progress("", "warning", "cannot remove empty journal " + run.run_id + ": " + st.error().to_string());
      }
      continue;
    }
    const auto* pp = run.info.if_contains("policy_plan");
    auto plan = pp ? plan::plan_from_json(*pp) : Result<plan::Plan>(fail("journal has no plan"));
    if (!plan || plan->policies.size() != 1) {
      report::PolicyReport pr;
      pr.policy = run.run_id;
      pr.verdict = rollback_failed;
      pr.errors.push_back("journal " + run.run_id + " cannot be recovered: " +
                          (plan ? std::string("it holds no single policy plan") : plan.error().to_string()));
      rep.policies.push_back(std::move(pr));
      rep.journal_left = true;
      continue;
    }
    plans.push_back(std::move(*plan));
    const auto& policy_plan = plans.back().policies.front();
    auto& pr = report_of(rep, policy_plan);
    pr.notes.push_back("recovering interrupted run " + run.run_id);

    Work w;
    w.plan = &policy_plan;
    w.report = &pr;
    auto lock = d_.locks.lock(policy_plan.host);
    if (!lock) {
      pr.verdict = precondition_failed;
      pr.errors.push_back("the guest is busy: " + lock.error().to_string() + "; run recover again when it is done");
      rep.journal_left = true;
      continue;
    }
    w.lock = std::move(*lock);
    auto j = journal::Journal::resume(d_.journals, d_.clock, run.run_id, nullptr, json::object{{"by", "recover"}});
    if (!j) {
      pr.verdict = rollback_failed;
      pr.errors.push_back("cannot resume journal " + run.run_id + ": " + j.error().to_string());
      rep.journal_left = true;
      continue;
    }
    w.journal.emplace(std::move(*j));

    // A run whose verification already said "verified" only missed its last record.
    bool verified_already = false;
    for (const auto& s : run.steps) {
      if (s.kind == "verify" && s.state == journal::StepState::done) {
        const auto* v = s.result.if_contains("verdict");
        verified_already = v != nullptr && v->is_string() && v->get_string() == "verified";
      }
    }
    if (verified_already) {
      for (const auto& s : run.steps) w.report->changes.push_back(policy_plan.steps.at(s.step).summary);
      w.state = Work::State::verified;
      finish(w);
      continue;
    }
    // Everything else is undone: every apply step that began, unless its inverse already ran.
    for (const auto& s : run.steps) {
      if (s.step >= policy_plan.steps.size()) continue;
      if (s.state == journal::StepState::failed && s.error.starts_with(kRefused)) continue;
      const auto* back = run.find(journal::StepPhase::rollback, s.step);
      if (back != nullptr && back->state == journal::StepState::done) continue;
      if (std::find(w.touched.begin(), w.touched.end(), s.step) == w.touched.end()) w.touched.push_back(s.step);
    }
    std::sort(w.touched.begin(), w.touched.end());
    w.state = Work::State::failed;
    w.cause = "interrupted";
    if (w.touched.empty()) {
      pr.notes.push_back("no step had started: nothing to undo");
    } else {
      std::vector<Work*> batch{&w};
      roll_back(batch);
    }
    finish(w);
    if (!w.rollback_ok) rep.journal_left = true;
  }
  rep.finished_at = journal::format_utc(d_.clock.now());
  remember_results(rep);
  return rep;
}

}  // namespace pw::reconcile
