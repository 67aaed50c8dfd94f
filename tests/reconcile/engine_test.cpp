// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <map>

#include "plan/render.hpp"
#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;

TEST_CASE("the trunking trap ends wrong-path and is rolled back to the byte") {
  SeedWorld w;
  const auto vm_before = w.vm().current;
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=4.2, _netdev]", false), false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  const auto& p = rep.policies[0];
  CHECK(p.verdict == pw::report::Verdict::rolled_back);
  CHECK(p.cause == pw::report::RollbackCause::wrong_path);
  CHECK(report::exit_code(rep) == 4);
  REQUIRE(p.verification);
  // The probe's bytes crossed the old link (ens20), none the intended one (ens19).
  const auto& ifs = p.verification->interfaces;
  auto find = [&](const std::string& n) {
    return std::find_if(ifs.begin(), ifs.end(), [&](const auto& i) { return i.name == n; });
  };
  REQUIRE(find("ens20") != ifs.end());
  CHECK(find("ens20")->rx_bytes >= 64ull << 20);
  CHECK(find("ens19")->rx_bytes == 0);
  REQUIRE(p.verification->diagnosis);
  CHECK(p.verification->diagnosis->find("trunk") != std::string::npos);
  CHECK_FALSE(p.warnings.empty());  // the plan warned before applying
  CHECK(w.guest().fstab == kSeedFstab);
  REQUIRE(w.guest().mounts.size() == 1);
  CHECK(w.guest().mounts[0].mount_point == "/mnt/tv");
  CHECK(w.vm().current == vm_before);
  CHECK(w.vm().pending.empty());
}

TEST_CASE("the seed's fix is verified, then a second run changes nothing") {
  SeedWorld w;
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  CHECK(report::exit_code(rep) == 2);
  CHECK(w.vm().current.at("net1") == std::string(kNet1) + ",queues=8");
  CHECK(w.guests.nic_by_mac("media-vm", "bc:24:11:00:00:02")->channels == 8);
  CHECK(w.guest().fstab.find("# Managed by pathwarden (policy movies-10g)") != std::string::npos);
  CHECK(w.guest().fstab.find("198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0") !=
        std::string::npos);
  // Each change as the report gives it: the step's kind, what it changed, before and after.
  std::map<std::string, pw::report::Change> changes;
  for (const auto& c : rep.policies[0].changes) changes[c.action] = c;
  REQUIRE(changes.contains("set-nic"));
  CHECK(changes["set-nic"].target == "VM 101 net1");
  CHECK(changes["set-nic"].before == std::string(kNet1));
  CHECK(changes["set-nic"].after == std::string(kNet1) + ",queues=8");
  REQUIRE(changes.contains("set-channels"));
  CHECK(changes["set-channels"].after == "8");
  REQUIRE(changes.contains("change-fstab"));
  CHECK(changes["change-fstab"].target == "media-vm /mnt/movies");
  CHECK(changes["change-fstab"].after == "198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0");
  CHECK(changes["change-fstab"].before != changes["change-fstab"].after);
  CHECK_FALSE(changes.contains("prove-path"));  // a proof, not a change

  const auto writes = w.pve.writes;
  const auto fstab = w.guest().fstab;
  auto again = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(again));
  CHECK(again.policies[0].verdict == pw::report::Verdict::converged);
  CHECK(report::exit_code(again) == 0);
  CHECK(w.pve.writes == writes);
  CHECK(w.guest().fstab == fstab);
}

TEST_CASE("a misrouted new address ends wrong-path and is rolled back") {
  SeedWorld w;
  w.guest().routes[kNewLink] = "ens20";  // a host route sends the new address over the old link
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, _netdev]", false), false);
  INFO(text(rep));
  CHECK(rep.policies[0].verdict == pw::report::Verdict::rolled_back);
  CHECK(rep.policies[0].cause == pw::report::RollbackCause::wrong_path);
  REQUIRE(rep.policies[0].verification->diagnosis);
  CHECK(rep.policies[0].verification->diagnosis->find("misrouted") != std::string::npos);
  CHECK(w.guest().fstab == kSeedFstab);
}

TEST_CASE("a NAS given by host name is resolved by the guest: converges, and the fstab keeps the name") {
  SeedWorld w;
  w.guest().hosts_file = {{"nas-10g.example", {kNewLink}}, {"nas-1g.example", {kOldLink}}};
  auto engine = w.engine();
  auto policy = movies_policy("[vers=3, nconnect=8, _netdev]", true, "nas-10g.example", "nas-1g.example");
  auto rep = engine.reconcile(policy, false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  REQUIRE(rep.policies[0].verification);
  CHECK(rep.policies[0].verification->server_address == kNewLink);
  CHECK(rep.policies[0].verification->server_name == "nas-10g.example");
  CHECK(w.guest().fstab.find("nas-10g.example:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0") !=
        std::string::npos);
  // The mount shows addr=198.51.100.2, the policy a name: compared through the guest's resolver.
  auto again = engine.reconcile(policy, false);
  INFO(text(again));
  CHECK(again.policies[0].verdict == pw::report::Verdict::converged);

  SECTION("a name the guest cannot resolve is a precondition, with what to do") {
    w.guest().hosts_file.erase("nas-10g.example");
    auto rep2 = engine.reconcile(policy, false);
    INFO(text(rep2));
    CHECK(rep2.policies[0].verdict == pw::report::Verdict::precondition_failed);
    CHECK_THAT(text(rep2), Catch::Contains("server nas-10g.example does not resolve in guest media-vm"));
  }
}

TEST_CASE("a saved plan applied after its restart window closed is refused before anything is written") {
  SeedWorld w;  // the clock starts on a Friday at 00:00 UTC
  auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  policies[0].restart.window = policy::parse_time_window("Fri 00:00-01:00 UTC").value();
  auto engine = w.engine();
  const auto plan = engine.observe_and_plan(policies);
  REQUIRE(plan.policies[0].state == plan::PolicyState::changes);  // planned inside the window

  SECTION("applied inside it: runs") {
    w.clock.advance(std::chrono::minutes(30));
    auto rep = engine.apply(plan);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  }
  SECTION("applied after it: nothing is written, and the report says when it is") {
    w.clock.advance(std::chrono::hours(2));
    const auto writes = w.pve.writes;
    auto rep = engine.apply(plan);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::precondition_failed);
    CHECK_THAT(text(rep),
               Catch::Contains("the restart window 'Fri 00:00-01:00 UTC' is closed now (it is Fri 02:00 UTC)"));
    CHECK(w.pve.writes == writes);
    CHECK(w.guest().fstab == kSeedFstab);
  }
  SECTION("the window closes while the run is under way: no reboot, the pending change undone") {
    w.vm().current["hotplug"] = "disk,usb";  // the queues change waits for a reboot
    auto slow = engine.observe_and_plan(policies);
    REQUIRE(slow.policies[0].state == plan::PolicyState::changes);
    int restarts = 0;
    w.pve.on_restart = [&](int) { ++restarts; };
    w.pve.on_write = [&](int) { w.clock.advance(std::chrono::hours(2)); };  // a slow first step
    auto rep = engine.apply(slow);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::rolled_back);
    CHECK_THAT(text(rep), Catch::Contains("the restart window 'Fri 00:00-01:00 UTC' is closed now"));
    CHECK(restarts == 0);
    CHECK(w.vm().pending.empty());
    CHECK(w.vm().current.at("net1") == kNet1);
    CHECK(w.guest().fstab == kSeedFstab);
  }
}

TEST_CASE("a rebooted VM that does not start again: the report carries the start task's failure and log line") {
  SeedWorld w;
  w.vm().current["hotplug"] = "disk,usb";  // the queues change waits for a reboot
  w.pve.restart_start_failure = "start failed: QEMU exited with code 1";
  w.pve.restart_start_log = {
      "kvm: -netdev tap,id=net1: could not configure /dev/net/tun (tap101i1): Device or resource busy",
      "start failed: QEMU exited with code 1", "TASK ERROR: start failed: QEMU exited with code 1"};
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  CHECK(rep.policies[0].verdict != pw::report::Verdict::verified);
  CHECK_THAT(text(rep), Catch::Contains("VM 101 did not start again after the reboot: its qmstart task (root@pam) "
                                        "failed: start failed: QEMU exited with code 1"));
  CHECK_THAT(text(rep), Catch::Contains("the task log says: kvm: -netdev tap,id=net1: could not configure"));
}

TEST_CASE("preflight follows Proxmox's bridge checks: trunk VLANs one by one, an SDN VNet in its zone") {
  SeedWorld w;
  reconcile::EngineOptions o;
  o.api_identity = "pathwarden@pve!reconcile";
  auto engine = w.engine(o);
  const auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  const std::set<std::string> vm_privs{"VM.Audit", "VM.Config.Network", "VM.PowerMgmt"};

  SECTION("trunks: a VLAN without SDN.Use blocks, naming it") {
    w.vm().current["net1"] = std::string(kNet1) + ",trunks=20;30";
    w.pve.acl = std::map<std::string, std::set<std::string>>{{"/vms/101", vm_privs},
                                                             {"/sdn/zones/localnetwork/vmbr1/20", {"SDN.Use"}}};
    auto plan = engine.observe_and_plan(policies);
    INFO((plan.policies[0].blockers.empty() ? std::string() : plan.policies[0].blockers[0]));
    REQUIRE(plan.policies[0].state == plan::PolicyState::precondition_failed);
    CHECK_THAT(plan.policies[0].blockers[0], Catch::Contains("lacks SDN.Use on /sdn/zones/localnetwork/vmbr1/30"));
  }
  SECTION("an SDN VNet: its zone's path") {
    std::string net1 = kNet1;
    net1.replace(net1.find("bridge=vmbr1"), 12, "bridge=vnet7");
    w.vm().current["net1"] = net1;
    w.pve.sdn_vnets = {{"vnet7", "zone1"}};
    w.pve.acl =
        std::map<std::string, std::set<std::string>>{{"/vms/101", vm_privs}, {"/sdn/zones/zone1/vnet7", {"SDN.Use"}}};
    auto plan = engine.observe_and_plan(policies);
    INFO((plan.policies[0].blockers.empty() ? std::string() : plan.policies[0].blockers[0]));
    CHECK(plan.policies[0].state == plan::PolicyState::changes);
  }
  SECTION("a reboot without Sys.Audit on the node: allowed, with a note on what it costs") {
    w.vm().current["hotplug"] = "disk,usb";
    w.pve.acl = std::map<std::string, std::set<std::string>>{{"/vms/101", vm_privs},
                                                             {"/sdn/zones/localnetwork/vmbr1", {"SDN.Use"}}};
    auto plan = engine.observe_and_plan(policies);
    REQUIRE(plan.policies[0].state == plan::PolicyState::changes);
    CHECK_THAT(plan.policies[0].notes.back(), Catch::Contains("has no Sys.Audit on /nodes/pve1"));
  }
}

TEST_CASE("a stop asked for (SIGTERM) ends the run at the next safe point, undoing what it began") {
  SeedWorld w;
  int stop = 0;
  reconcile::EngineOptions o;
  o.stop_requested = [&] { return stop; };
  auto engine = w.engine(o);
  const auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");

  SECTION("before observing: nothing observed, nothing written") {
    stop = 15;
    const auto writes = w.pve.writes;
    auto rep = engine.reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.stopped_by_signal == 15);
    CHECK(report::exit_code(rep) == 143);
    CHECK(rep.policies[0].verdict == pw::report::Verdict::unobserved);
    CHECK_THAT(text(rep), Catch::Contains("not observed: the run was stopped by SIGTERM"));
    CHECK_THAT(text(rep), !Catch::Contains("reality kept changing"));
    CHECK(w.pve.writes == writes);
    CHECK(engine.recover().policies.empty());  // nothing left for recover
  }
  SECTION("observed and planned, stopped before the first change: its journal is finished") {
    int asked = 0;
    o.stop_requested = [&] { return ++asked >= 2 ? 15 : 0; };  // 1: the observe batch, 2: before set-nic
    auto stopping = w.engine(o);
    const auto writes = w.pve.writes;
    auto rep = stopping.reconcile(policies, false);
    INFO(text(rep));
    CHECK(report::exit_code(rep) == 143);
    CHECK(rep.policies[0].verdict == pw::report::Verdict::precondition_failed);
    CHECK_THAT(text(rep), Catch::Contains("stopped by SIGTERM before its first change (next: set net1 queues"));
    CHECK(w.pve.writes == writes);
    CHECK_FALSE(rep.journal_left);
    CHECK(stopping.recover().policies.empty());
  }
  SECTION("mid-change: the NIC re-plug is undone, the fstab never written") {
    w.pve.on_write = [&](int) { stop = 2; };  // Ctrl-C while Proxmox applies the first step
    auto rep = engine.reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.stopped_by_signal == 2);
    CHECK(report::exit_code(rep) == 130);
    CHECK(rep.policies[0].verdict == pw::report::Verdict::rolled_back);
    CHECK(rep.policies[0].cause == pw::report::RollbackCause::interrupted);
    CHECK(w.vm().current.at("net1") == kNet1);
    CHECK(w.guest().fstab == kSeedFstab);
    CHECK(engine.recover().policies.empty());  // nothing left for recover
    CHECK(report::to_json(rep).as_object().at("stopped_by") == "SIGINT");
  }
}

TEST_CASE("a VM migrated to another node is followed there, with a note to update the policy") {
  SeedWorld w;
  w.vm().ref.node = "pve2";  // live-migrated after the policy was written for pve1
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  CHECK(rep.policies[0].node == "pve2");
  CHECK_THAT(text(rep), Catch::Contains("VM 101 runs on node pve2, not pve1 as spec.guest.node says"));
  CHECK(w.vm().current.at("net1") == std::string(kNet1) + ",queues=8");
}

TEST_CASE("preflight: a privilege the plan needs and the token lacks blocks it before anything is written") {
  SeedWorld w;
  reconcile::EngineOptions o;
  o.api_identity = "pathwarden@pve!reconcile";
  auto engine = w.engine(o);
  const auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");

  SECTION("VM.Config.Network missing on the VM: the pveum command that grants it") {
    w.pve.acl = std::map<std::string, std::set<std::string>>{{"/vms/101", {"VM.Audit", "VM.PowerMgmt"}},
                                                             {"/sdn/zones/localnetwork/vmbr1", {"SDN.Use"}}};
    const auto writes = w.pve.writes;
    auto plan = engine.observe_and_plan(policies);
    REQUIRE(plan.policies[0].state == plan::PolicyState::precondition_failed);
    REQUIRE(plan.policies[0].blockers.size() == 1);
    CHECK_THAT(plan.policies[0].blockers[0],
               Catch::StartsWith("pathwarden@pve!reconcile lacks VM.Config.Network on /vms/101, needed to set net1 "
                                 "queues 1 → 8"));
    CHECK_THAT(
        plan.policies[0].blockers[0],
        Catch::Contains("pveum acl modify /vms/101 --roles PathwardenOperator --tokens 'pathwarden@pve!reconcile' "
                        "(and --users pathwarden@pve"));
    auto rep = engine.reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::precondition_failed);
    CHECK(w.pve.writes == writes);
    CHECK(w.guest().fstab == kSeedFstab);
  }
  SECTION("SDN.Use missing on the NIC's bridge") {
    w.pve.acl = std::map<std::string, std::set<std::string>>{{"/vms/101", {"VM.Audit", "VM.Config.Network"}}};
    auto plan = engine.observe_and_plan(policies);
    REQUIRE(plan.policies[0].state == plan::PolicyState::precondition_failed);
    CHECK_THAT(plan.policies[0].blockers[0], Catch::Contains("lacks SDN.Use on /sdn/zones/localnetwork/vmbr1"));
  }
  SECTION("a permissions call that fails leaves it to Proxmox's own checks, with a note") {
    proxmox::ApiError e;
    e.message = "Method 'GET /access/permissions' not implemented";
    w.pve.permissions_error = e;
    auto plan = engine.observe_and_plan(policies);
    CHECK(plan.policies[0].state == plan::PolicyState::changes);
    CHECK_THAT(plan.policies[0].notes.back(), Catch::Contains("the privileges were not checked beforehand"));
  }
  SECTION("a fstab-only change asks for nothing") {
    w.pve.acl = std::map<std::string, std::set<std::string>>{};  // no privilege anywhere
    auto plan = engine.observe_and_plan(movies_policy("[vers=3, _netdev]", false));
    CHECK(plan.policies[0].state == plan::PolicyState::changes);
  }
}

TEST_CASE("the running state comes from status/current, not the lagging cluster listing") {
  SeedWorld w;
  auto engine = w.engine();
  const auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");

  SECTION("started seconds ago, still listed stopped: planned as running, re-plugged, no reboot") {
    w.vm().listed_status = "stopped";
    int restarts = 0;
    w.pve.on_restart = [&](int) { ++restarts; };
    auto rep = engine.reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
    CHECK(restarts == 0);
    CHECK_THAT(text(rep), Catch::Contains("VM 101 is running (status/current), not stopped as the cluster listing"));
  }
  SECTION("no sample yet (unknown): the same") {
    w.vm().listed_status = "unknown";
    auto plan = engine.observe_and_plan(policies);
    CHECK(plan.policies[0].state == plan::PolicyState::changes);
  }
  SECTION("just stopped, still listed running: blocked, nothing written") {
    w.vm().listed_status = "running";
    w.vm().status = "stopped";
    const auto writes = w.pve.writes;
    auto rep = engine.reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::precondition_failed);
    CHECK_THAT(text(rep), Catch::Contains("never starts a stopped one"));
    CHECK(w.pve.writes == writes);
  }
  SECTION("stopped between the plan and the write: re-read right before it, never written") {
    const auto plan = engine.observe_and_plan(policies);
    REQUIRE(plan.policies[0].state == plan::PolicyState::changes);
    w.vm().status = "stopped";
    const auto writes = w.pve.writes;
    auto rep = engine.apply(plan);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict != pw::report::Verdict::verified);
    CHECK(w.pve.writes == writes);
  }
}

TEST_CASE("a guest whose MACs were swapped is judged by the host's taps and rolled back") {
  // ens20 (net2, the old link) now wears net1's MAC and the route sends the new address over it:
  // the guest's own counters credit "net1". The hypervisor's taps count by the NIC itself.
  SeedWorld w;
  auto& g = w.guest();
  g.nics[1].mac = "bc:24:11:00:00:03";
  g.nics[1].made_as = "bc:24:11:00:00:02";
  g.nics[2].mac = "bc:24:11:00:00:02";
  g.nics[2].made_as = "bc:24:11:00:00:03";
  g.routes[kNewLink] = "ens20";
  w.vm().nics = {{0, {1000, 1000}}, {1, {2000, 2000}}, {2, {3000, 3000}}};
  w.guests.on_wire = [&](const std::string&, const std::string& made_as, std::uint64_t bytes,
                         pw::verify::ProbeDirection) {
    const int n = made_as == "bc:24:11:00:00:01" ? 0 : made_as == "bc:24:11:00:00:02" ? 1 : 2;
    w.vm().nics[n].netin += bytes;
  };
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, _netdev]", false), false);
  INFO(text(rep));
  const auto& p = rep.policies[0];
  CHECK(p.verdict == pw::report::Verdict::rolled_back);
  CHECK(p.cause == pw::report::RollbackCause::wrong_path);
  REQUIRE(p.verification);
  CHECK(p.verification->decided_by == pw::verify::Signal::host_taps);
  CHECK(p.verification->carried_by == "net2");
  CHECK(w.guest().fstab == kSeedFstab);

  SECTION("without tap counters the report says the verdict is guest-side only") {
    SeedWorld quiet;
    auto e = quiet.engine();
    auto ok = e.reconcile(movies_policy("[vers=3, _netdev]", false), false);
    REQUIRE(ok.policies[0].verification);
    const auto& sigs = ok.policies[0].verification->signals;
    auto host =
        std::find_if(sigs.begin(), sigs.end(), [](const auto& r) { return r.signal == pw::verify::Signal::host_taps; });
    REQUIRE(host != sigs.end());
    CHECK(host->state == pw::verify::SignalState::unavailable);
    CHECK(host->detail.find("guest-side only") != std::string::npos);
    CHECK(ok.policies[0].verdict == pw::report::Verdict::verified);
  }
}

TEST_CASE("an API that does not answer is 'unobserved' (exit 6), never drift") {
  SeedWorld w;
  pw::proxmox::ApiError down;
  down.kind = pw::proxmox::ApiErrorKind::transport;
  down.message = "connect to 127.0.0.1:8006: Connection refused";
  w.pve.down = down;
  auto engine = w.engine();
  auto checked = engine.reconcile(movies_policy("[vers=3, _netdev]", false), true);
  INFO(text(checked));
  REQUIRE(checked.policies.size() == 1);
  CHECK(checked.policies[0].verdict == pw::report::Verdict::unobserved);
  CHECK(report::exit_code(checked) == 6);
  REQUIRE_FALSE(checked.policies[0].errors.empty());
  CHECK(checked.policies[0].errors[0].find("could not observe VM 101: connect to 127.0.0.1:8006: Connection refused") !=
        std::string::npos);
  auto rep = engine.reconcile(movies_policy("[vers=3, _netdev]", false), false);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::unobserved);
  CHECK(report::exit_code(rep) == 6);
  CHECK(w.guest().fstab == kSeedFstab);
  CHECK(w.pve.writes == 0);

  SECTION("a guest that does not answer is unobserved too") {
    SeedWorld g;
    g.guest().reachable = false;
    auto e = g.engine();
    auto r = e.reconcile(movies_policy("[vers=3, _netdev]", false), true);
    INFO(text(r));
    CHECK(r.policies[0].verdict == pw::report::Verdict::unobserved);
    CHECK(report::exit_code(r) == 6);
  }
}

TEST_CASE("check mode finds drift and touches nothing") {
  SeedWorld w;
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), true);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::drift);
  CHECK(report::exit_code(rep) == 3);
  CHECK(w.pve.writes == 0);
  CHECK(w.guest().fstab == kSeedFstab);
  CHECK(w.journals.list().value().empty());
}

TEST_CASE("a concurrent Proxmox edit is re-read and re-planned, never overwritten") {
  SeedWorld w;
  w.pve.conflict_next_write = "edited by someone else";
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  CHECK(w.vm().current.at("description") == "edited by someone else");
  CHECK(w.vm().current.at("net1") == std::string(kNet1) + ",queues=8");
}

TEST_CASE("an fstab edited between observe and write is re-observed, the edit kept") {
  SeedWorld w;
  w.guests.edit_fstab_before_apply = "tmpfs /scratch tmpfs defaults 0 0\n";
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  CHECK(w.guest().fstab.find("tmpfs /scratch tmpfs defaults 0 0") != std::string::npos);
  CHECK(w.guest().fstab.find("/mnt/movies") != std::string::npos);
  // Proxmox was changed in the first round, rolled back on the conflict, and changed again.
  CHECK(w.vm().current.at("net1") == std::string(kNet1) + ",queues=8");
}

TEST_CASE("a failing mount rolls everything back, the NIC included") {
  SeedWorld w;
  w.guest().fail_mounts = true;
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  CHECK(rep.policies[0].verdict == pw::report::Verdict::rolled_back);
  CHECK(w.vm().current.at("net1") == kNet1);
  CHECK(w.guest().fstab == kSeedFstab);
  CHECK(report::exit_code(rep) == 4);
}

TEST_CASE("a rollback whose last undo restarted the VM reads the restored state from the guest's answer") {
  SeedWorld w;
  w.vm().current["hotplug"] = "disk,usb";  // the queues change, and its revert, wait for a reboot
  w.guest().routes[kNewLink] = "ens20";    // misrouted: the verification fails and the run rolls back
  int restarts = 0;
  const auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");

  SECTION("as before the run: no facts run after the guest answered") {
    w.pve.on_restart = [&](int) { ++restarts; };
    auto rep = w.engine().reconcile(policies, false);
    INFO(text(rep));
    REQUIRE(rep.policies[0].verdict == pw::report::Verdict::rolled_back);
    CHECK(restarts == 2);  // the forward change, then its revert
    REQUIRE_FALSE(w.guests.calls.empty());
    CHECK(w.guests.calls.back() == "wait_reachable media-vm");
    const auto& checks = rep.policies[0].restored_checks;
    CHECK(std::any_of(checks.begin(), checks.end(),
                      [](const auto& c) { return c.starts_with("/etc/fstab is byte-identical to before"); }));
    CHECK(std::any_of(checks.begin(), checks.end(), [](const auto& c) { return c.starts_with("Proxmox net1 is"); }));
  }
  SECTION("changed across that restart: the answer it came with shows it") {
    w.pve.on_restart = [&](int) {
      if (++restarts == 2) w.guest().fstab += "# an edit that lands with the reboot\n";
    };
    auto rep = w.engine().reconcile(policies, false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::rollback_failed);
    CHECK_THAT(text(rep), Catch::Contains("not restored: /etc/fstab differs from before the run"));
  }
}

TEST_CASE("a NIC without combined channels: the channels step changes nothing, so no rollback of it runs") {
  SeedWorld w;
  const auto follow = w.pve.on_nic_change;
  w.pve.on_nic_change = [&](int vmid, const std::string& key, const std::string& value) {
    follow(vmid, key, value);
    w.guest().nics[1].max_channels = 0;  // `ethtool -l` says Combined: n/a (an e1000, a veth)
  };
  auto rep = w.engine().reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  const auto& p = rep.policies[0];
  CHECK(p.verdict == pw::report::Verdict::rolled_back);
  CHECK_THAT(text(rep), Catch::Contains("ens19 has no combined channels to set"));
  const auto& calls = w.guests.calls;
  CHECK(std::count_if(calls.begin(), calls.end(), [](const auto& c) { return c.starts_with("set_channels"); }) == 1);
  CHECK(w.vm().current.at("net1") == kNet1);  // the queues change before it is undone
  CHECK(w.guest().fstab == kSeedFstab);
}

TEST_CASE("without permission to restart, a queues change is blocked and nothing happens") {
  SeedWorld w;
  auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  policies[0].restart.allowed = false;
  auto engine = w.engine();
  auto rep = engine.reconcile(policies, false);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::precondition_failed);
  CHECK(report::exit_code(rep) == 3);
  CHECK(w.pve.writes == 0);
}

TEST_CASE("a converged observation costs one list call and one config read per VM") {
  SeedWorld w;
  auto engine = w.engine();
  (void)engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  w.pve.reads = 0;
  w.guests.runs = 0;
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::converged);
  CHECK(w.pve.reads == 2);
  CHECK(w.guests.runs == 1);  // one facts run, no probe
}

TEST_CASE("status remembers the last verified time across a later failure") {
  SeedWorld w;
  auto engine = w.engine();
  (void)engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  auto r = w.results.get("movies-10g").value();
  REQUIRE(r);
  CHECK(r->verdict == "verified");
  CHECK(r->last_verified_at);
}

TEST_CASE("a journal that stops taking records mid-apply stops the run, undoes it and leaves it for recover") {
  SeedWorld w;
  const auto vm_before = w.vm().current;
  // The disk fills the moment Proxmox has taken the NIC change: the step's "done" record, and
  // every record after it, cannot be written.
  auto follow_nic = w.pve.on_nic_change;
  w.pve.on_nic_change = [&](int vmid, const std::string& key, const std::string& value) {
    follow_nic(vmid, key, value);
    w.journals.fail_appends("No space left on device");
  };
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  const auto& p = rep.policies[0];
  CHECK(p.verdict == pw::report::Verdict::rolled_back);
  CHECK(p.cause == pw::report::RollbackCause::apply_failed);  // labelled by the layer that failed
  const auto said = [&](std::string_view what) {
    return std::any_of(p.errors.begin(), p.errors.end(),
                       [&](const auto& e) { return e.find(what) != std::string::npos; });
  };
  CHECK(said("cannot record"));
  CHECK(said("No space left on device"));
  CHECK(said("left for 'pathwarden recover'"));
  CHECK(rep.journal_left);
  CHECK(report::exit_code(rep) == 5);
  // Nothing of the change stays: the NIC is back, the fstab and mounts were never touched.
  CHECK(w.vm().current == vm_before);
  CHECK(w.vm().pending.empty());
  CHECK(w.guest().fstab == kSeedFstab);

  // Once the disk has room again, recover finds the run and finishes it: nothing is left to undo.
  w.journals.fail_appends(std::nullopt);
  auto rec = engine.recover();
  INFO(text(rec));
  REQUIRE(rec.policies.size() == 1);
  CHECK(rec.policies[0].verdict == pw::report::Verdict::rolled_back);
  CHECK_FALSE(rec.journal_left);
  CHECK(w.vm().current == vm_before);
  auto again = engine.recover();
  CHECK(again.policies.empty());
}

TEST_CASE("a run that stored results prunes the finished journals to the retention") {
  SeedWorld w;
  pw::reconcile::EngineOptions o;
  o.retention = {1, std::chrono::days(30)};
  // Two fixes an hour apart (a journal each, both finished): only the newer one stays.
  auto first = w.engine(o).reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  REQUIRE(first.policies.at(0).verdict == pw::report::Verdict::verified);
  CHECK(w.journals.list().value().size() == 1);
  w.clock.advance(std::chrono::hours(1));
  auto again = w.engine(o).reconcile(movies_policy("[vers=3, nconnect=4, _netdev]"), false);
  INFO(text(again));
  CHECK(again.policies.at(0).verdict == pw::report::Verdict::verified);
  const auto left = w.journals.list().value();
  REQUIRE(left.size() == 1);
  CHECK(left.front().starts_with(again.plan_id));  // the newest is the one kept
}

TEST_CASE("a sudo that would ask for a password is found before anything is changed") {
  SeedWorld w;
  const auto vm_before = w.vm().current;
  w.guest().sudo = guest::SudoCheck{guest::SudoCheck::Outcome::asks, "sudo: a password is required"};
  auto engine = w.engine();
  SECTION("check and reconcile: precondition-failed, exit 3, nothing written") {
    for (bool check_only : {true, false}) {
      auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), check_only);
      INFO(text(rep));
      const auto& p = rep.policies[0];
      CHECK(p.verdict == pw::report::Verdict::precondition_failed);
      REQUIRE_FALSE(p.errors.empty());
      CHECK_THAT(p.errors[0], Catch::Contains("sudo in media-vm asks for a password (sudo: a password is required) "
                                              "and the inventory gives none"));
      CHECK_THAT(p.errors[0], Catch::Contains("ansible_become_password"));
      CHECK(report::exit_code(rep) == 3);
      CHECK(w.guest().fstab == kSeedFstab);
      CHECK(w.vm().current == vm_before);
    }
  }
  SECTION("with the password given in the inventory, the change runs") {
    w.guest().sudo->outcome = guest::SudoCheck::Outcome::password_given;
    auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  }
  SECTION("a converged path needs no root: no blocker") {
    w.guest().sudo.reset();
    (void)engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
    w.guest().sudo = guest::SudoCheck{guest::SudoCheck::Outcome::absent, ""};
    auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
    INFO(text(rep));
    CHECK(rep.policies[0].verdict == pw::report::Verdict::converged);
  }
}

// spec.mount.trunking written inside the options' line: movies_policy puts it in spec.mount.
constexpr const char* kMoveTransport = "[vers=4.2, _netdev]\n    trunking: move-transport";

TEST_CASE("trunking: move-transport: the trap's client is moved, NFSv4.2 kept, /mnt/tv never unmounted") {
  SeedWorld w;
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy(kMoveTransport, false), false);
  INFO(text(rep));
  REQUIRE(rep.policies.size() == 1);
  CHECK(rep.policies[0].verdict == pw::report::Verdict::verified);
  CHECK(report::exit_code(rep) == 2);
  for (const auto& m : w.guest().mounts) CHECK(m.addr == kNewLink);  // both mounts ride the new address
  CHECK(std::find(w.guests.unmounted.begin(), w.guests.unmounted.end(), "/mnt/tv") == w.guests.unmounted.end());
  CHECK(w.guest().fstab.find("198.51.100.2:/srv/nas/tv /mnt/tv nfs vers=4.2,_netdev 0 0") != std::string::npos);
  std::map<std::string, pw::report::Change> changes;
  for (const auto& c : rep.policies[0].changes) changes[c.action] = c;
  REQUIRE(changes.contains("move-transport"));
  CHECK(changes["move-transport"].target == "media-vm /mnt/movies NFS client");
  CHECK(changes["move-transport"].before == kOldLink);
  CHECK(changes["move-transport"].after == kNewLink);

  auto again = engine.reconcile(movies_policy(kMoveTransport, false), false);
  INFO(text(again));
  CHECK(again.policies[0].verdict == pw::report::Verdict::converged);
}

TEST_CASE("a moved client whose proof fails is moved back before the fstab is put back") {
  SeedWorld w;
  w.guest().routes[kNewLink] = "ens20";  // the new address is routed over the old link
  auto engine = w.engine();
  auto rep = engine.reconcile(movies_policy(kMoveTransport, false), false);
  INFO(text(rep));
  CHECK(rep.policies[0].verdict == pw::report::Verdict::rolled_back);
  CHECK(rep.policies[0].cause == pw::report::RollbackCause::wrong_path);
  CHECK(w.guest().fstab == kSeedFstab);
  REQUIRE(w.guest().mounts.size() == 1);
  CHECK(w.guest().mounts[0].mount_point == "/mnt/tv");
  CHECK(w.guest().mounts[0].addr == kOldLink);
  // The move back came before the fstab's restore, which unmounted /mnt/movies.
  auto at = [&](std::string_view call) {
    return std::find_if(w.guests.calls.begin(), w.guests.calls.end(),
                        [&](const std::string& c) { return c.starts_with(call); }) -
           w.guests.calls.begin();
  };
  std::vector<std::string> moves;
  for (const auto& c : w.guests.calls)
    if (c.starts_with("move_transport")) moves.push_back(c);
  CHECK(moves.size() == 2);
  const auto restore = at("restore_fstab");
  CHECK(restore < static_cast<std::ptrdiff_t>(w.guests.calls.size()));
  CHECK(std::find_if(w.guests.calls.begin() + restore, w.guests.calls.end(),
                     [](const std::string& c) { return c.starts_with("move_transport"); }) == w.guests.calls.end());
}
