// SPDX-License-Identifier: GPL-3.0-or-later
// Observing and planning a fleet in batches (EngineOptions::observe_batch): the same plans as one
// pass, every guest's facts gathered exactly once, one list call in all, the policies' order kept.
#include <catch2/catch.hpp>

#include "plan/render.hpp"
#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;

namespace {

// Passes every call on and remembers which guests each facts run was asked for.
class FactsLog final : public guest::GuestPort {
 public:
  explicit FactsLog(GuestPort& inner) : inner_(inner) {}
  std::vector<std::vector<std::string>> runs;

  using GuestPort::gather_facts;
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> gather_facts(
      std::span<const std::string> h, const guest::FactsRequests& names) override {
    runs.emplace_back(h.begin(), h.end());
    return inner_.gather_facts(h, names);
  }
  std::map<std::string, guest::GuestResult<void>> apply_fstab(std::span<const guest::FstabChange> c) override {
    return inner_.apply_fstab(c);
  }
  std::map<std::string, guest::GuestResult<void>> restore_fstab(std::span<const guest::FstabRestore> r) override {
    return inner_.restore_fstab(r);
  }
  std::map<std::string, guest::GuestResult<void>> set_channels(std::span<const guest::ChannelsRequest> r) override {
    return inner_.set_channels(r);
  }
  std::map<std::string, guest::GuestResult<void>> move_transport(std::span<const guest::TransportMove> r) override {
    return inner_.move_transport(r);
  }
  std::map<std::string, guest::GuestResult<guest::ProbeOutcome>> probe(
      std::span<const guest::ProbeRequest> p) override {
    return inner_.probe(p);
  }
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> wait_reachable(std::span<const std::string> h,
                                                                              std::chrono::seconds t) override {
    return inner_.wait_reachable(h, t);
  }

 private:
  GuestPort& inner_;
};

std::string mac_of(int vmid) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "bc:24:11:00:%02x:%02x", (vmid >> 8) & 0xff, vmid & 0xff);
  return buf;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Guests g1..g5 on VMs 201..205, each reaching the NAS through its one NIC; g3 carries two
// policies, listed apart from each other.
struct Fleet {
  SimulatedProxmox pve;
  SimulatedGuests guests;
  FactsLog log{guests};
  journal::InMemoryJournalStore journals;
  journal::InMemoryGuestLocks locks;
  journal::InMemoryPolicyResultStore results;
  journal::ManualClock clock{std::chrono::system_clock::time_point(std::chrono::hours(24 * 20000))};
  timing::ManualSleeper sleeper;
  std::vector<policy::StoragePath> policies;

  Fleet() {
    std::string text;
    auto add_policy = [&](const std::string& name, int vmid, const std::string& path) {
      text += "---\napiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: " + name +
              "}\nspec:\n  guest: {node: pve1, vmid: " + std::to_string(vmid) + ", host: g" +
              std::to_string(vmid - 200) + "}\n  nic: {device: net1, queues: 2}\n  mount:\n" +
              "    server: 198.51.100.2\n    export: /srv/nas" + path + "\n    path: " + path +
              "\n    options: [vers=3, _netdev]\n  verify: {probe_file: probe.bin, probe_bytes: 8MiB}\n" +
              "  restart: {allowed: true}\n";
    };
    for (int vmid = 201; vmid <= 205; ++vmid) {
      SimulatedProxmox::Vm vm;
      vm.ref = {"pve1", vmid};
      vm.current = {{"net1", "virtio=" + upper(mac_of(vmid)) + ",bridge=vmbr1"}};
      pve.vms[vmid] = vm;
      SimulatedGuests::Guest g;
      g.fstab = "UUID=abcd / ext4 errors=remount-ro 0 1\n";
      g.nics = {{"ens19", mac_of(vmid), 1, 1, 0, 0, 3}};
      g.routes = {{"198.51.100.2", "ens19"}};
      g.nas_addresses = {"198.51.100.2"};
      guests.guests["g" + std::to_string(vmid - 200)] = g;
      add_policy("data-" + std::to_string(vmid), vmid, "/mnt/data");
    }
    add_policy("media-203", 203, "/mnt/media");
    pve.on_nic_change = [this](int vmid, const std::string&, const std::string& value) {
      auto spec = proxmox::NetDeviceSpec::parse(value).value();
      auto* nic = guests.nic_by_mac("g" + std::to_string(vmid - 200), *spec.mac());
      if (nic == nullptr) return;
      nic->max_channels = nic->channels = spec.queues().value_or(1);
    };
    auto r = policy::load_text(text, "fleet.yaml");
    if (!r.ok()) throw std::runtime_error(r.diagnostics.front().to_string());
    policies = r.paths;
  }

  reconcile::Engine engine(std::size_t batch) {
    reconcile::EngineOptions o;
    o.observe_batch = batch;
    return reconcile::Engine({pve, log, journals, locks, results, clock, sleeper, {}}, o);
  }
};

std::vector<std::string> names(const plan::Plan& p) {
  std::vector<std::string> out;
  for (const auto& pp : p.policies) out.push_back(pp.policy);
  return out;
}

}  // namespace

TEST_CASE("planning in batches gives the plans of one pass, gathering each guest's facts once") {
  Fleet f;
  auto one_pass = f.engine(100);
  const auto whole = one_pass.make_plan(f.policies, one_pass.observe(f.policies));
  REQUIRE(f.log.runs.size() == 1);
  f.log.runs.clear();
  f.pve.reads = 0;

  auto batched = f.engine(2);
  const auto plan = batched.observe_and_plan(f.policies);
  INFO(plan::render_plan(plan, {}));
  // Five guests two at a time: three facts runs; g3 (two policies) in one of them only.
  REQUIRE(f.log.runs.size() == 3);
  CHECK(f.log.runs[0] == std::vector<std::string>{"g1", "g2"});
  CHECK(f.log.runs[1] == std::vector<std::string>{"g3", "g4"});
  CHECK(f.log.runs[2] == std::vector<std::string>{"g5"});
  // One list call, one config read per VM, and the live status of each VM a plan acts on with a
  // NIC step (here all five: the cluster listing's state lags, Observer::live_status), and the
  // SDN VNet list once, for preflight's bridge paths.
  CHECK(f.pve.reads == 1 + 5 + 5 + 1);
  CHECK(names(plan) == names(whole));
  REQUIRE(plan.policies.size() == whole.policies.size());
  for (std::size_t i = 0; i < plan.policies.size(); ++i) {
    const auto& a = plan.policies[i];
    const auto& b = whole.policies[i];
    INFO(a.policy);
    CHECK(a.state == plan::PolicyState::changes);
    CHECK(a.state == b.state);
    CHECK(a.host == b.host);
    REQUIRE(a.steps.size() == b.steps.size());
    for (std::size_t s = 0; s < a.steps.size(); ++s) CHECK(a.steps[s].summary == b.steps[s].summary);
    CHECK(a.warnings == b.warnings);
    CHECK(a.blockers == b.blockers);
  }
}

TEST_CASE("a fleet reconciled in batches is verified, then checked converged without a write") {
  Fleet f;
  auto engine = f.engine(2);
  auto rep = engine.reconcile(f.policies, false);
  INFO(report::render_text(rep));
  REQUIRE(rep.policies.size() == f.policies.size());
  for (std::size_t i = 0; i < rep.policies.size(); ++i) {
    CHECK(rep.policies[i].policy == f.policies[i].name);
    CHECK(rep.policies[i].verdict == pw::report::Verdict::verified);
  }
  CHECK(f.guests.guests.at("g3").fstab.find("/mnt/media") != std::string::npos);
  CHECK(f.guests.guests.at("g3").fstab.find("/mnt/data") != std::string::npos);

  const auto writes = f.pve.writes;
  f.log.runs.clear();
  f.guests.runs = 0;
  auto check = engine.reconcile(f.policies, true);
  INFO(report::render_text(check));
  REQUIRE(check.policies.size() == f.policies.size());
  for (std::size_t i = 0; i < check.policies.size(); ++i) {
    CHECK(check.policies[i].policy == f.policies[i].name);
    CHECK(check.policies[i].host == f.policies[i].guest.host);
    CHECK(check.policies[i].verdict == pw::report::Verdict::converged);
  }
  CHECK(report::exit_code(check) == 0);
  CHECK(f.pve.writes == writes);
  CHECK(f.log.runs.size() == 3);
  CHECK(f.guests.runs == 3);  // facts only: no probe, no playbook that changes anything
}

TEST_CASE("check mode in batches reports drift per policy, in the policies' order") {
  Fleet f;
  f.guests.guests.at("g4").reachable = false;
  auto engine = f.engine(2);
  auto rep = engine.reconcile(f.policies, true);
  INFO(report::render_text(rep));
  REQUIRE(rep.policies.size() == f.policies.size());
  for (std::size_t i = 0; i < rep.policies.size(); ++i) {
    INFO(f.policies[i].name);
    CHECK(rep.policies[i].policy == f.policies[i].name);
    const bool unreachable = f.policies[i].guest.host == "g4";
    CHECK(rep.policies[i].verdict == (unreachable ? pw::report::Verdict::unobserved : pw::report::Verdict::drift));
    CHECK(rep.policies[i].planned.empty() == unreachable);
    CHECK(rep.policies[i].errors.empty() == !unreachable);  // a check is one pass: no "kept changing"
  }
  CHECK(report::exit_code(rep) == 6);  // one guest could not be observed: a failure, not drift
  CHECK(f.pve.writes == 0);
  CHECK(f.journals.list().value().empty());
}
