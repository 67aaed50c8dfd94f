// SPDX-License-Identifier: GPL-3.0-or-later
// Proxmox faults on a 200-VM fleet (issue 9, item 1): the real pvesim, the real proxmox::Client
// and the real Engine; the guests are simulated in-process (fleet.hpp). Under each fault every
// VM must end converged/verified or with a clear error of its own, pvesim must never have taken
// a config write without a digest, and a rerun after the fault clears must converge.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "fleet.hpp"
#include "proxmox/net_device.hpp"
#include "report/run_report.hpp"

using namespace pw;
using namespace pw::reliability;
namespace bj = boost::json;

namespace {

constexpr int kFleetSize = 200;

std::string text_of(const bj::value& v) {
  return v.is_string() ? std::string(v.as_string()) : bj::serialize(v);
}

std::string canonical(const std::string& net) {
  auto spec = proxmox::NetDeviceSpec::parse(net);
  return spec ? spec->canonical() : net;
}

std::optional<int> queues_of(const std::string& net) {
  auto spec = proxmox::NetDeviceSpec::parse(net);
  return spec ? spec->queues() : std::nullopt;
}

bool contains_any(const std::string& text, const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(), [&](const auto& w) { return text.find(w) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " | ") + s;
  return out;
}

struct Tally {
  std::map<std::string, int> verdicts;
  std::string sample_error;  // one per-VM error, for the README's table

  std::string str() const {
    std::string out;
    for (const auto& [v, n] : verdicts) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + v;
    return out;
  }
};

// Every policy ends verified/converged with pvesim and the guest in the new state, or with an
// error naming the fault (one of `words`) and both sides as before (rollback-failed: left for
// recover). The fstab is always exactly the old or the new file.
Tally check_every_vm(Fleet& f, const report::RunReport& rep, const std::vector<std::string>& words) {
  Tally t;
  auto states = f.vm_states();
  REQUIRE(rep.policies.size() == f.vms.size());
  for (const auto& pr : rep.policies) {
    const auto vm = std::find_if(f.vms.begin(), f.vms.end(), [&](const FleetVm& v) { return v.vmid == pr.vmid; });
    REQUIRE(vm != f.vms.end());
    INFO("VM " << pr.vmid << " (" << pr.policy << "): " << pr.verdict << "; errors: " << joined(pr.errors)
               << "; notes: " << joined(pr.notes));
    ++t.verdicts[std::string(pw::report::to_string(pr.verdict))];
    const auto& st = states.at(pr.vmid);
    const std::string nic = text_of(st.at("config").as_object().at(vm->device));
    const auto* pending = st.if_contains("pending");
    const bool nic_pending = pending != nullptr && pending->as_object().contains(vm->device);
    const auto& fstab = f.bound.guests().at(vm->host).fstab;
    const bool new_fstab = fstab.find(std::string(kServer) + ":/srv/" + vm->host) != std::string::npos;
    CHECK((fstab == initial_fstab(vm->host) || new_fstab));
    if (pr.verdict == pw::report::Verdict::verified || pr.verdict == pw::report::Verdict::converged) {
      CHECK(queues_of(nic).value_or(1) == vm->queues_wanted);
      CHECK_FALSE(nic_pending);
      CHECK(new_fstab);
      continue;
    }
    REQUIRE_FALSE(pr.errors.empty());
    CHECK(contains_any(joined(pr.errors), words));
    if (t.sample_error.empty()) t.sample_error = pr.errors.front();
    if (pr.verdict == pw::report::Verdict::rollback_failed) {
      CHECK(contains_any(joined(pr.errors), {"pathwarden recover"}));
      continue;
    }
    // A read the API failed is "could not observe" (unobserved), a refused write rolls back.
    CHECK((pr.verdict == pw::report::Verdict::precondition_failed || pr.verdict == pw::report::Verdict::unobserved ||
           pr.verdict == pw::report::Verdict::rolled_back));
    CHECK(canonical(nic) == canonical(vm->nic_before));
    CHECK_FALSE(nic_pending);
    CHECK(fstab == initial_fstab(vm->host));
  }
  return t;
}

// After the fault: recover whatever a run left, reconcile (everything ends verified or
// converged), and once more: nothing left to do, nothing written.
std::string rerun_converges(Fleet& f, proxmox::Api& api) {
  f.guests.before = nullptr;
  auto engine = f.engine(api);
  auto recovered = engine.recover();
  INFO(report::render_text(recovered));
  CHECK(report::exit_code(recovered) != 5);
  auto rerun = engine.reconcile(f.policies, false);
  auto t = check_every_vm(f, rerun, {});
  CHECK(t.verdicts.size() ==
        static_cast<std::size_t>(t.verdicts.contains("verified") + t.verdicts.contains("converged")));
  const auto writes = f.stat("config_writes");
  auto again = engine.reconcile(f.policies, false);
  auto t2 = check_every_vm(f, again, {});
  CHECK(t2.verdicts["converged"] == static_cast<int>(f.vms.size()));
  CHECK(f.stat("config_writes") == writes);
  CHECK(engine.recover().policies.empty());
  return "rerun: " + t.str() + "; then " + t2.str();
}

void no_blind_writes(Fleet& f) {
  // pvesim counts every accepted config write and those without a digest.
  CHECK(f.stat("config_writes") > 0);
  CHECK(f.stat("config_writes_without_digest") == 0);
}

void record(const std::string& name, const Tally& t, const std::string& rerun, const std::string& extra = {}) {
  record_case("proxmox_faults", "Proxmox (pvesim, 200 VMs)", name,
              t.str() + (t.sample_error.empty() ? "" : "; e.g. \"" + t.sample_error + "\"") +
                  (extra.empty() ? "" : "; " + extra) + "; " + rerun + "; writes without digest: 0");
}

}  // namespace

TEST_CASE("no fault: the whole fleet is changed and verified, a second run writes nothing") {
  Fleet f(kFleetSize);
  REQUIRE(f.vms.size() > 120);
  REQUIRE(std::any_of(f.vms.begin(), f.vms.end(), [](const FleetVm& v) { return !v.hotplug; }));
  auto api = f.client(f.token_options());
  auto rep = f.engine(*api).reconcile(f.policies, false);
  auto t = check_every_vm(f, rep, {});
  CHECK(t.verdicts["verified"] == static_cast<int>(f.vms.size()));
  no_blind_writes(f);
  record("no fault (baseline)", t, rerun_converges(f, *api),
         std::to_string(f.vms.size()) + " policies (" +
             std::to_string(std::count_if(f.vms.begin(), f.vms.end(), [](const FleetVm& v) { return !v.hotplug; })) +
             " need a restart)");
}

TEST_CASE("latency spikes past the client timeout") {
  Fleet f(kFleetSize);
  auto options = f.token_options();
  options.timeout = std::chrono::milliseconds(400);
  auto api = f.client(options);
  // Counted, not timed: after 40 writes (in the middle of the NIC changes) the next 12 writes are
  // answered 4 s late, ten times the client's timeout, so the answer of a write that timed out
  // may well have been applied. Reads are never slowed: their retries cannot outlast the fault.
  f.sim().admin("PUT", "/pvesim/faults", R"({"slow_writes": 12, "slow_writes_after": 40, "slow_writes_ms": 4000})");
  auto rep = f.engine(*api).reconcile(f.policies, false);
  const auto delayed = f.stat("delayed_requests");
  f.sim().admin("POST", "/pvesim/faults/reset");
  CHECK(delayed == 12);  // the fault hit, counted by the fault itself
  auto t = check_every_vm(f, rep, {"no answer within", "may or may not have been applied"});
  CHECK(t.verdicts["verified"] < static_cast<int>(f.vms.size()));
  no_blind_writes(f);
  record("latency spike: 12 writes (after the 40th) answered 4 s late, client timeout 400 ms", t,
         rerun_converges(f, *api));
}

TEST_CASE("20 % of requests answered 503") {
  Fleet f(kFleetSize);
  auto api = f.client(f.token_options());
  f.sim().admin("PUT", "/pvesim/faults", R"({"error_rate": 0.2, "error_status": 503})");
  auto rep = f.engine(*api).reconcile(f.policies, false);
  f.sim().admin("POST", "/pvesim/faults/reset");
  CHECK(f.stat("injected_errors") > 50);
  auto t = check_every_vm(f, rep, {"503", "injected server error"});
  no_blind_writes(f);
  record("20 % of requests answered 503", t, rerun_converges(f, *api), "reads retried, writes sent once");
}

TEST_CASE("dropped connections") {
  Fleet f(kFleetSize);
  auto api = f.client(f.token_options());
  f.sim().admin("PUT", "/pvesim/faults", R"({"drop_rate": 0.1})");
  auto rep = f.engine(*api).reconcile(f.policies, false);
  f.sim().admin("POST", "/pvesim/faults/reset");
  CHECK(f.stat("injected_drops") > 20);
  auto t = check_every_vm(f, rep, {"connection", "closed", "may have", "end of stream", "stream truncated"});
  no_blind_writes(f);
  record("10 % of connections dropped without an answer", t, rerun_converges(f, *api));
}

TEST_CASE("a concurrent editor changes every VM between our read and our write") {
  Fleet f(kFleetSize);
  auto api = f.client(f.token_options());
  bj::array edits;
  for (const auto& vm : f.vms) edits.push_back(bj::object{{"vmid", vm.vmid}, {"after_reads", 1}});
  f.sim().admin("PUT", "/pvesim/faults", bj::serialize(bj::object{{"concurrent_edits", edits}}));
  auto rep = f.engine(*api).reconcile(f.policies, false);
  const auto mismatches = f.stat("digest_mismatches");
  CHECK(f.stat("concurrent_edits") == static_cast<std::int64_t>(f.vms.size()));
  CHECK(mismatches >= static_cast<std::int64_t>(f.vms.size()));
  // Every write lost the race, was refused for its stale digest, and was re-planned from a fresh
  // read: all verified in the same run, and the other admin's edit is still there.
  auto t = check_every_vm(f, rep, {});
  CHECK(t.verdicts["verified"] == static_cast<int>(f.vms.size()));
  for (const auto& pr : rep.policies) {
    CHECK(contains_any(joined(pr.notes), {"digest mismatch"}));
  }
  auto states = f.vm_states();
  for (const auto& vm : f.vms) {
    INFO("VM " << vm.vmid);
    CHECK(text_of(states.at(vm.vmid).at("config").as_object().at("description")).find("another admin") !=
          std::string::npos);
  }
  no_blind_writes(f);
  record("a concurrent editor between every read and write (digest conflict)", t, rerun_converges(f, *api),
         std::to_string(mismatches) + " stale-digest writes refused by Proxmox and re-planned; the other edits kept");
}

TEST_CASE("VMs locked by a backup, before the run and between plan and write") {
  Fleet f(kFleetSize);
  auto api = f.client(f.token_options());
  std::vector<int> before, during;
  for (std::size_t i = 0; i < f.vms.size(); i += 10) before.push_back(f.vms[i].vmid);
  for (std::size_t i = 5; i < f.vms.size(); i += 10) during.push_back(f.vms[i].vmid);
  for (int id : before) f.sim().admin("PUT", "/pvesim/vms/" + std::to_string(id) + "/lock", R"({"lock":"backup"})");
  bool locked = false;
  f.guests.before = [&](const std::string& call) {
    if (call != "gather_facts" || locked) return;
    locked = true;  // the plan is made; the backup starts before our write
    for (int id : during) f.sim().admin("PUT", "/pvesim/vms/" + std::to_string(id) + "/lock", R"({"lock":"backup"})");
  };
  auto rep = f.engine(*api).reconcile(f.policies, false);
  auto t = check_every_vm(f, rep, {"locked (backup)"});
  for (const auto& pr : rep.policies) {
    const bool was_locked = std::find(before.begin(), before.end(), pr.vmid) != before.end() ||
                            std::find(during.begin(), during.end(), pr.vmid) != during.end();
    INFO("VM " << pr.vmid << ": " << pr.verdict);
    CHECK((pr.verdict == pw::report::Verdict::verified) == !was_locked);
  }
  for (int id : before) f.sim().admin("DELETE", "/pvesim/vms/" + std::to_string(id) + "/lock");
  for (int id : during) f.sim().admin("DELETE", "/pvesim/vms/" + std::to_string(id) + "/lock");
  no_blind_writes(f);
  record("VMs locked by a backup (" + std::to_string(before.size()) + " before the run, " +
             std::to_string(during.size()) + " between plan and write)",
         t, rerun_converges(f, *api));
}

TEST_CASE("a failing reboot task") {
  Fleet f(kFleetSize);
  auto api = f.client(f.token_options());
  bj::array failures;
  int restarts = 0;
  for (const auto& vm : f.vms) {
    if (vm.hotplug) continue;
    ++restarts;
    failures.push_back(bj::object{{"type", "qmreboot"}, {"vmid", vm.vmid}, {"message", "reboot failed (injected)"}});
  }
  REQUIRE(restarts > 0);
  f.sim().admin("PUT", "/pvesim/faults", bj::serialize(bj::object{{"task_failures", failures}}));
  auto rep = f.engine(*api).reconcile(f.policies, false);
  auto t = check_every_vm(f, rep, {"reboot failed (injected)"});
  CHECK(t.verdicts["rolled-back"] == restarts);  // the pending queues change taken back
  no_blind_writes(f);
  record("the reboot task fails (every VM that needs a restart)", t, rerun_converges(f, *api));
}

TEST_CASE("an expired ticket in the middle of a run (ticket auth)") {
  Fleet f(kFleetSize);
  auto api = f.client(f.ticket_options());
  int facts_calls = 0;
  f.guests.before = [&](const std::string& call) {
    // Tickets invalidated while the configs are read, and again after the first write.
    if (call == "gather_facts" && ++facts_calls <= 2) f.sim().admin("POST", "/pvesim/tickets/reset");
  };
  auto rep = f.engine(*api).reconcile(f.policies, false);
  auto t = check_every_vm(f, rep, {});
  CHECK(t.verdicts["verified"] == static_cast<int>(f.vms.size()));
  const int logins = f.sim().request_count("POST /access/ticket");
  CHECK(logins >= 3);
  no_blind_writes(f);
  record("tickets expire twice during the run (user + password auth)", t, rerun_converges(f, *api),
         std::to_string(logins) + " logins: the client logged in again after each 401");
}

TEST_CASE("the node's TLS certificate changes: the pinned fingerprint refuses it, naming both") {
  Fleet f(kFleetSize);
  const auto pinned = f.token_options();
  f.restart_pvesim_with_new_certificate();
  REQUIRE(f.sim().fingerprint() != pinned.fingerprint);
  f.sim().admin("POST", "/pvesim/stats/reset");
  auto api = f.client(pinned);
  auto rep = f.engine(*api).reconcile(f.policies, false);
  auto t = check_every_vm(f, rep, {pinned.fingerprint});
  for (const auto& pr : rep.policies) {
    CHECK(pr.verdict == pw::report::Verdict::unobserved);             // could not observe: never drift
    CHECK(contains_any(joined(pr.errors), {f.sim().fingerprint()}));  // expected and seen
  }
  CHECK(f.stat("api_requests") == 0);  // nothing reached the API, let alone a write
  // The operator checks the new certificate and pins it.
  auto repinned = f.client(f.token_options());
  record("the node's certificate changes (pvesim restarted with a new one; old fingerprint pinned)", t,
         rerun_converges(f, *repinned), "0 requests reached the API");
  no_blind_writes(f);
}
