// SPDX-License-Identifier: GPL-3.0-or-later
// spec.nic.mtu and the path MTU in the planner (plan/mtu_checks.cpp): the policy's MTU against the
// Proxmox NIC's mtu= and the guest interface, and the facts' don't-fragment ping toward the NAS.
// Every mismatch is a blocker naming the remedy; nothing here ever plans a step.
#include <catch2/catch.hpp>

#include "fixtures.hpp"

using namespace pw;
using namespace pw::plan;
using namespace pw::plan::testing;

namespace {

policy::StoragePath jumbo_policy(const std::string& mtu = "9000") {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: movies-10g}\nspec:\n"
      "  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: net1, queues: 8" +
      (mtu.empty() ? std::string() : ", mtu: " + mtu) +
      "}\n  mount:\n    server: 198.51.100.2\n    export: /srv/nas/movies\n    path: /mnt/movies\n"
      "    options: [vers=3, nconnect=8, _netdev]\n    reason: jumbo frames to the NAS\n"
      "  verify: {probe_file: probe.bin}\n";
  auto r = policy::load_text(text, "movies.yaml");
  if (!r.ok() || r.paths.size() != 1) throw std::runtime_error("fixture policy invalid");
  return r.paths.front();
}

// The seed's guest converged for the policy: queues=8, the entry written, the mount as it says;
// net1's interface runs `guest_mtu`, the path probe says `probe` (none: not measured).
Observation converged(const policy::StoragePath& p, int guest_mtu, const std::string& probe = "",
                      const std::string& net1 = "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8") {
  auto o = converged_observation(p, "rw,vers=3,nconnect=8,addr=198.51.100.2,mountaddr=198.51.100.2", net1);
  o.guest->interfaces[1].mtu = guest_mtu;
  if (!probe.empty()) o.guest->path_mtu["198.51.100.2"] = guest::parse_path_mtu(probe, "test").value();
  return o;
}

}  // namespace

TEST_CASE("MTU as the policy asks all the way to the NAS: converged, the crossing noted") {
  auto p = jumbo_policy();
  auto plan = plan_policy(p, converged(p, 9000, "route 198.51.100.2 ens19 9000\nping 8972 0 2 -\n"), context());
  CHECK(plan.state == PolicyState::converged);
  CHECK(plan.blockers.empty());
  CHECK(has(plan.notes, "a don't-fragment ping of MTU 9000 crossed to 198.51.100.2 over ens19"));
}

TEST_CASE("the guest interface at another MTU than the policy's: a precondition naming Proxmox's way") {
  auto p = jumbo_policy();
  auto plan = plan_policy(p, converged(p, 1500, "route 198.51.100.2 ens19 1500\nnojumbo\n"), context());
  REQUIRE(plan.state == PolicyState::precondition_failed);
  REQUIRE(plan.blockers.size() == 1);
  CHECK_THAT(plan.blockers[0], Catch::StartsWith("ens19 in guest media-vm runs MTU 1500, the policy asks 9000 "
                                                 "(spec.nic.mtu at movies.yaml:6:"));
  CHECK_THAT(plan.blockers[0], Catch::Contains("stop and start VM 101 through Proxmox"));
  CHECK(plan.steps.empty());
}

TEST_CASE("the Proxmox NIC forcing another MTU: a precondition; mtu=1 (follow the bridge) is not one") {
  auto p = jumbo_policy();
  auto forced = plan_policy(
      p, converged(p, 9000, "", "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8,mtu=1500"), context());
  REQUIRE(forced.state == PolicyState::precondition_failed);
  CHECK_THAT(forced.blockers.at(0),
             Catch::StartsWith("net1 of VM 101 has mtu=1500 in Proxmox, the policy asks 9000 (spec.nic.mtu at"));
  auto bridge =
      plan_policy(p, converged(p, 9000, "", "virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8,mtu=1"), context());
  CHECK(bridge.state == PolicyState::converged);
  CHECK(has(bridge.notes, "the path MTU to 198.51.100.2 was not measured (no probe in the facts)"));
}

TEST_CASE("a black hole on the path: a precondition, with or without spec.nic.mtu") {
  const std::string hole = "route 198.51.100.2 ens19 9000\nping 8972 1 0 -\nping 1472 0 2 -\n";
  for (const std::string mtu : {"9000", ""}) {
    INFO("spec.nic.mtu: " << mtu);
    auto p = jumbo_policy(mtu);
    auto plan = plan_policy(p, converged(p, 9000, hole), context());
    REQUIRE(plan.state == PolicyState::precondition_failed);
    REQUIRE(plan.blockers.size() == 1);
    CHECK_THAT(plan.blockers[0], Catch::StartsWith("the path to 198.51.100.2 drops packets of MTU 9000 (ens19's) "
                                                   "without a word, while 1500-byte ones cross"));
    CHECK_THAT(plan.blockers[0], Catch::Contains("'ping -M do -s 8972 198.51.100.2'"));
  }
}

TEST_CASE("a hop that says it carries less: a warning, unless the policy asks more") {
  const std::string hop = "route 198.51.100.2 ens19 9000\nping 8972 1 0 4000\nping 1472 0 2 -\n";
  auto free = jumbo_policy("");
  auto warned = plan_policy(free, converged(free, 9000, hop), context());
  CHECK(warned.state == PolicyState::converged);
  CHECK(has(warned.warnings, "a hop toward 198.51.100.2 carries MTU 4000, less than ens19's 9000"));
  auto asked = jumbo_policy();
  auto blocked = plan_policy(asked, converged(asked, 9000, hop), context());
  REQUIRE(blocked.state == PolicyState::precondition_failed);
  CHECK(has(blocked.blockers, "and the policy asks 9000"));
}

TEST_CASE("could not observe is never a finding: ICMP filtered, no ping, the MTU not read") {
  auto p = jumbo_policy();
  auto silent = plan_policy(p, converged(p, 9000, "route 198.51.100.2 ens19 9000\nping 8972 1 0 -\nping 1472 1 0 -\n"),
                            context());
  CHECK(silent.state == PolicyState::converged);
  CHECK(has(silent.notes, "answered no ping, of MTU 9000 nor of 1500"));
  auto no_ping = plan_policy(p, converged(p, 9000, "route 198.51.100.2 ens19 9000\nnoping\n"), context());
  CHECK(no_ping.state == PolicyState::converged);
  CHECK(has(no_ping.notes, "ping is not installed"));
  auto o = converged(p, 9000);
  o.guest->interfaces[1].mtu.reset();
  auto unread = plan_policy(p, o, context());
  CHECK(unread.state == PolicyState::converged);
  CHECK(has(unread.notes, "ens19's MTU in guest media-vm is unknown: not checked against 9000"));
}
