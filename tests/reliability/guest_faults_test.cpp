// SPDX-License-Identifier: GPL-3.0-or-later
// Guest faults (issue 9, item 2) on light guests: the real Engine, the real Ansible guest port
// (ansible-playbook over real SSH into the light guests of the CTest fixture light_guests) and
// the real pvesim whose VMs carry the guests' MACs. Faults are injected for real inside the
// guests (links down, a read-only or full /etc, a mount that fails after the write) exactly at a
// run's phase boundaries. Every case ends rolled-back, inconclusive or with a clear error, and the
// guest's fstab is byte for byte the old or the new file, never a mix.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "case_record.hpp"
#include "guest/sha256.hpp"
#include "injecting_guests.hpp"
#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/replay.hpp"
#include "journal/result_store.hpp"
#include "journal/state_dir.hpp"
#include "journal/storage.hpp"
#include "light_lab.hpp"
#include "plan/model.hpp"
#include "policy/loader.hpp"
#include "proxmox/client.hpp"
#include "proxmox/net_device.hpp"
#include "pvesim_process.hpp"
#include "reconcile/engine.hpp"
#include "report/run_report.hpp"
#include "temp_dir.hpp"

using namespace pw;
using namespace pw::reliability;
namespace bj = boost::json;
namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " | ") + s;
  return out;
}

int vmid_of(int guest) {
  return 200 + guest;
}

// pvesim with one VM per light guest (net0 = the guest's eth0 MAC), the real Ansible guest port,
// a real state directory; the engine's waits shortened so a lost guest is given up in seconds.
struct LightWorld {
  testing::LightLab lab = testing::LightLab::open();
  testing::TempDir tmp{"pw-rel-guest"};
  std::string dir = tmp.path().string();
  std::map<int, std::string> nic_before;
  std::unique_ptr<proxmox::testing::PvesimProcess> sim;
  std::unique_ptr<proxmox::Client> api;
  std::unique_ptr<guest::GuestPort> real;
  std::unique_ptr<InjectingGuests> guests;
  std::optional<journal::StateDir> state;
  std::optional<journal::FileJournalStore> journals;
  std::optional<journal::FlockGuestLocks> locks;
  std::optional<journal::FilePolicyResultStore> results;
  journal::SystemClock clock;
  timing::RealSleeper sleeper;
  reconcile::EngineOptions options;

  LightWorld() {
    REQUIRE(lab.guests >= 3);
    bj::array vms;
    for (int i = 1; i <= 3; ++i) {
      nic_before[i] = "virtio=" + lab.mac(i) + ",bridge=vmbr0";
      bj::object config{{"name", lab.host(i)}, {"cores", "2"}, {"net0", nic_before[i]}};
      if (i == 3) config["hotplug"] = "disk,usb";  // a queues change waits for a restart
      vms.push_back(bj::object{{"vmid", vmid_of(i)}, {"node", "pve1"}, {"running", true}, {"config", config}});
    }
    const auto state_file = dir + "/pvesim-state.json";
    std::ofstream(state_file) << bj::serialize(bj::object{{"nodes", bj::array{"pve1"}}, {"guests", vms}});
    auto args = proxmox::testing::default_pvesim_args();
    args.insert(args.end(), {"--state", state_file});
    sim = std::make_unique<proxmox::testing::PvesimProcess>(args);
    auto client = proxmox::Client::create(sim->client_options());
    REQUIRE(client);
    api = std::move(*client);
    real = lab.ansible_port(dir + "/work", std::chrono::seconds(30));
    guests = std::make_unique<InjectingGuests>(*real);
    auto st = journal::StateDir::open(dir + "/state");
    REQUIRE(st);
    state.emplace(std::move(*st));
    journals.emplace(*state);
    locks.emplace(*state, clock);
    results.emplace(*state);
    options.task_wait = {std::chrono::seconds(60), std::chrono::milliseconds(20), std::chrono::milliseconds(200)};
    options.guest_return_timeout = std::chrono::seconds(20);
    options.interface_return_timeout = std::chrono::seconds(20);
    options.requeue_backoff = std::chrono::milliseconds(100);
  }
  reconcile::Engine engine() {
    return reconcile::Engine({*api, *guests, *journals, *locks, *results, clock, sleeper, {}}, options);
  }

  // The guest's policy: an NFS mount (which a light guest cannot make: no NFS client), with or
  // without a queues change of its NIC.
  std::vector<policy::StoragePath> policy(int i, std::optional<int> queues = std::nullopt) const {
    const std::string text =
        "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: rel-" + lab.host(i) +
        "}\nspec:\n  guest: {node: pve1, vmid: " + std::to_string(vmid_of(i)) + ", host: " + lab.host(i) +
        "}\n  nic: {device: net0" + (queues ? ", queues: " + std::to_string(*queues) : std::string()) +
        "}\n  mount:\n    server: 198.51.100.2\n    export: /volume1/reliability\n    path: /mnt/reliability\n"
        "    options: [vers=3, _netdev]\n    reason: reliability test\n"
        "  verify: {probe_file: probe.bin, probe_bytes: 1MiB}\n  restart: {allowed: true}\n";
    auto r = policy::load_text(text, lab.host(i) + ".yaml");
    if (!r.ok()) throw std::runtime_error(r.diagnostics.front().to_string());
    return r.paths;
  }

  // The fstab the plan would write (what "new" means for the old-or-new check).
  std::string planned_fstab(const std::vector<policy::StoragePath>& p) {
    auto e = engine();
    auto observed = e.observe(p);
    auto plan = e.make_plan(p, observed);
    for (const auto& pp : plan.policies) {
      for (const auto& s : pp.steps) {
        if (const auto* c = std::get_if<plan::ChangeFstab>(&s.action)) return c->new_content;
      }
    }
    FAIL("the plan changes no fstab:\n" << boost::json::serialize(plan::to_json(plan)));
    return {};
  }

  std::string fstab(int i) const { return lab.file(i, "/etc/fstab"); }
  bool mounted(int i, const std::string& path) const {
    return lab.file(i, "/proc/mounts").find(" " + path + " ") != std::string::npos;
  }
  boost::json::object vm_state(int i) { return sim->guest_state(vmid_of(i)).as_object(); }
  std::string nic_now(int i) {
    const auto st = vm_state(i);
    return std::string(st.at("config").as_object().at("net0").as_string());
  }
  bool nic_pending(int i) {
    const auto st = vm_state(i);
    const auto* p = st.if_contains("pending");
    return p != nullptr && p->as_object().contains("net0");
  }
  // A journal of a run that never finished (recover's work); finished ones stay as a record.
  bool journals_left() {
    const auto scan = journal::scan_journals(*journals);
    return !scan.interrupted.empty() || !scan.unreadable.empty();
  }
};

std::string canonical(const std::string& net) {
  auto spec = proxmox::NetDeviceSpec::parse(net);
  return spec ? spec->canonical() : net;
}

// Undoes a fault inside a guest when the test ends, however it ends.
struct Undo {
  std::function<void()> f;
  ~Undo() {
    if (f) f();
  }
};

void record(const std::string& name, const std::string& outcome) {
  record_case("guest_faults", "Guest (light guests: real SSH, Ansible, pvesim)", name, outcome);
}

std::string first_error(const report::PolicyReport& p) {
  return p.errors.empty() ? "" : p.errors.front();
}

}  // namespace

TEST_CASE("an Ansible task fails mid-apply: the mount fails after the fstab was written") {
  LightWorld w;
  const auto p = w.policy(1);
  const auto before = w.fstab(1);
  const auto planned = w.planned_fstab(p);
  std::string between;
  w.guests->after = [&](const std::string& call) {
    if (call == "apply_fstab") between = w.fstab(1);
  };
  auto rep = w.engine().reconcile(p, false);
  INFO(report::render_text(rep));
  const auto& pr = rep.policies.at(0);
  CHECK(between == planned);  // the write happened: the failure came after it
  CHECK(pr.verdict == pw::report::Verdict::rolled_back);
  CHECK_THAT(joined(pr.errors), Catch::Contains("applying the fstab change"));
  CHECK(w.fstab(1) == before);  // byte for byte
  CHECK_FALSE(w.mounted(1, "/mnt/reliability"));
  CHECK_THAT(joined(pr.restored_checks), Catch::Contains("byte-identical"));
  CHECK_FALSE(w.journals_left());
  CHECK(report::exit_code(rep) == 4);
  record("an Ansible task fails mid-apply (the NFS mount, after the fstab was written)",
         std::string(pw::report::to_string(pr.verdict)) + "; fstab byte-identical to before; e.g. \"" +
             first_error(pr) + "\"");
}

TEST_CASE("a read-only /etc: the fstab write fails, nothing changes") {
  LightWorld w;
  const auto p = w.policy(1);
  const auto before = w.fstab(1);
  w.lab.must(1, {"mount", "-o", "remount,bind,ro", "/etc"});
  Undo undo{[&] { w.lab.exec(1, {"mount", "-o", "remount,bind,rw", "/etc"}); }};
  auto rep = w.engine().reconcile(p, false);
  INFO(report::render_text(rep));
  const auto& pr = rep.policies.at(0);
  CHECK(pr.verdict == pw::report::Verdict::rolled_back);
  CHECK_THAT(joined(pr.errors), Catch::Contains("/etc not writable"));
  CHECK(w.fstab(1) == before);
  CHECK_FALSE(w.journals_left());
  record("/etc read-only in the guest",
         std::string(pw::report::to_string(pr.verdict)) + "; fstab byte-identical; e.g. \"" + first_error(pr) + "\"");
}

TEST_CASE("a full filesystem under /etc: the fstab write fails, the old file stays whole") {
  LightWorld w;
  const auto p = w.policy(2);
  const auto before = w.fstab(2);
  // A copy of /etc on a tmpfs just big enough, then filled up; bound over /etc in the guest only.
  w.lab.must(2, {"sh", "-ec",
                 "d=/tmp/pw-full-etc; mkdir -p $d; kb=$(du -sk /etc | cut -f1); "
                 "mount -t tmpfs -o size=$((kb + 4096))k pw-full-etc $d; cp -a /etc/. $d/; "
                 "mount --bind $d /etc; dd if=/dev/zero of=/etc/.pw-fill bs=64k 2>/dev/null || true; "
                 "dd if=/dev/zero of=/etc/.pw-fill2 bs=1k 2>/dev/null || true; df -k /etc"});
  Undo undo{[&] { w.lab.exec(2, {"sh", "-c", "umount /etc; umount /tmp/pw-full-etc; rmdir /tmp/pw-full-etc"}); }};
  CHECK(w.fstab(2) == before);
  auto rep = w.engine().reconcile(p, false);
  INFO(report::render_text(rep));
  const auto& pr = rep.policies.at(0);
  CHECK((pr.verdict == pw::report::Verdict::rolled_back || pr.verdict == pw::report::Verdict::precondition_failed));
  CHECK_THAT(joined(pr.errors), Catch::Contains("No space left on device"));
  CHECK(w.fstab(2) == before);
  CHECK_FALSE(w.journals_left());
  record("/etc full in the guest (tmpfs filled up)",
         std::string(pw::report::to_string(pr.verdict)) + "; fstab byte-identical; e.g. \"" + first_error(pr) + "\"");
}

TEST_CASE("SSH unreachable for the apply phase only: rolled back once the guest answers again") {
  LightWorld w;
  const auto p = w.policy(1);
  const auto before = w.fstab(1);
  Undo undo{[&] { w.lab.set_link(1, true); }};
  w.guests->before = [&](const std::string& call) {
    if (call == "apply_fstab") w.lab.set_link(1, false);
  };
  w.guests->after = [&](const std::string& call) {
    if (call == "apply_fstab") w.lab.set_link(1, true);
  };
  auto rep = w.engine().reconcile(p, false);
  INFO(report::render_text(rep));
  const auto& pr = rep.policies.at(0);
  CHECK(pr.verdict == pw::report::Verdict::rolled_back);
  CHECK_THAT(joined(pr.errors), Catch::Contains("guest1"));
  CHECK(w.fstab(1) == before);
  CHECK_FALSE(w.journals_left());
  record("SSH unreachable during the apply phase (guest link down), back before the rollback",
         std::string(pw::report::to_string(pr.verdict)) + "; fstab byte-identical; e.g. \"" + first_error(pr) + "\"");
}

TEST_CASE("SSH unreachable from the apply phase on: the journal is left, recover restores") {
  LightWorld w;
  const auto p = w.policy(1);
  const auto before = w.fstab(1);
  const auto planned = w.planned_fstab(p);
  Undo undo{[&] { w.lab.set_link(1, true); }};
  w.guests->before = [&](const std::string& call) {
    if (call == "apply_fstab") w.lab.set_link(1, false);
  };
  auto rep = w.engine().reconcile(p, false);
  w.guests->before = nullptr;
  INFO(report::render_text(rep));
  const auto& pr = rep.policies.at(0);
  CHECK(pr.verdict == pw::report::Verdict::rollback_failed);
  CHECK_THAT(joined(pr.errors), Catch::Contains("pathwarden recover"));
  CHECK(report::exit_code(rep) == 5);
  CHECK(w.journals_left());
  w.lab.set_link(1, true);
  const auto now = w.fstab(1);
  CHECK((now == before || now == planned));  // never a mix
  auto recovered = w.engine().recover();
  INFO(report::render_text(recovered));
  REQUIRE(recovered.policies.size() == 1);
  CHECK(recovered.policies[0].verdict == pw::report::Verdict::rolled_back);
  CHECK(report::exit_code(recovered) != 5);
  CHECK(w.fstab(1) == before);
  CHECK_FALSE(w.journals_left());
  record(
      "SSH unreachable from the apply phase on (link down for the rest of the run)",
      std::string(pw::report::to_string(pr.verdict)) + " (exit 5, journal left; e.g. \"" + first_error(pr) +
          "\"); after the link returns, recover: " + std::string(pw::report::to_string(recovered.policies[0].verdict)) +
          ", fstab byte-identical, no journal left");
}

TEST_CASE("a guest that does not come back after its restart") {
  LightWorld w;
  const auto p = w.policy(3, 2);  // queues 1 → 2 with network hot-plug off: a restart
  const auto before = w.fstab(3);
  Undo undo{[&] { w.lab.set_link(3, true); }};
  w.guests->before = [&](const std::string& call) {
    if (call == "wait_reachable") w.lab.set_link(3, false);  // the VM runs, its guest never answers
  };
  auto rep = w.engine().reconcile(p, false);
  w.guests->before = nullptr;
  INFO(report::render_text(rep));
  const auto& pr = rep.policies.at(0);
  CHECK((pr.verdict == pw::report::Verdict::rollback_failed || pr.verdict == pw::report::Verdict::rolled_back));
  CHECK_THAT(joined(pr.errors), Catch::Contains("did not come back after the restart"));
  CHECK(w.fstab(3) == before);  // the run never got to the fstab
  w.lab.set_link(3, true);
  auto recovered = w.engine().recover();
  INFO(report::render_text(recovered));
  CHECK(report::exit_code(recovered) != 5);
  CHECK(canonical(w.nic_now(3)) == canonical(w.nic_before.at(3)));
  CHECK_FALSE(w.nic_pending(3));
  CHECK(w.fstab(3) == before);
  CHECK_FALSE(w.journals_left());
  record("the guest does not come back after its restart (VM running, guest link down)",
         std::string(pw::report::to_string(pr.verdict)) + "; e.g. \"" + first_error(pr) +
             "\"; after it returns, recover: NIC as before (" + std::to_string(recovered.policies.size()) +
             " journal(s) finished), fstab byte-identical");
}
