// SPDX-License-Identifier: GPL-3.0-or-later
// The traffic of a converged path since the last run (verify/traffic_since.hpp): carried on the
// intended NIC, taken elsewhere (by the host's taps or the guest's connections), idle, and every
// way two runs' counters stop being comparable.
#include "verify/traffic_since.hpp"

#include <catch2/catch.hpp>

using namespace pw::verify;

namespace {

constexpr std::uint64_t kGB = 1000ull * 1000 * 1000;
const auto kIntendedMac = pw::net::MacAddress::parse("bc:24:11:00:00:02").value();
const auto kOldMac = pw::net::MacAddress::parse("bc:24:11:00:00:03").value();

struct Fixture {
  DesiredPath desired;
  NfsEvidence evidence;
  TrafficMark before, now;
  VerifySettings settings;

  Fixture() {
    desired.server = "198.51.100.2";
    desired.nas_addresses = {"192.0.2.2"};
    desired.intended_mac = kIntendedMac;
    evidence.local_addresses = {{"198.51.100.10", "ens19", kIntendedMac}, {"192.0.2.10", "ens20", kOldMac}};
    for (auto* m : {&before, &now}) {
      m->node = "pve1";
      m->pid = 4242;
      m->nic_lines = {{1, "virtio=BC:24:11:00:00:02,bridge=vmbr1"}, {2, "virtio=BC:24:11:00:00:03,bridge=vmbr2"}};
      m->taps = {{1, {100, 100}}, {2, {100, 100}}};
    }
    before.taken_at = "2026-12-06T01:00:00Z";
    now.taken_at = "2026-12-06T02:00:00Z";
    before.connections = {{{"198.51.100.10", 901, "198.51.100.2", 2049}, 1000, 1000}};
    now.connections = before.connections;
  }
  // `bytes` more read over the one connection, the taps of net1 and net2 moving as given.
  void move(std::uint64_t bytes, std::uint64_t net1, std::uint64_t net2) {
    *now.connections[0].bytes_received += bytes;
    now.taps[1].guest_rx += net1;
    now.taps[2].guest_rx += net2;
  }
  TrafficSince since() const { return traffic_since(before, now, desired, evidence, 1, settings); }
};

}  // namespace

TEST_CASE("traffic since the last run carried by the intended NIC says how much and where") {
  Fixture f;
  f.move(12400 * 1000 * 1000ull, 12900 * 1000 * 1000ull, 3000);
  const auto t = f.since();
  INFO(t.text);
  CHECK(t.finding == TrafficFinding::carried);
  CHECK(t.nfs_bytes == 12400 * 1000 * 1000ull);
  CHECK(t.text.starts_with("12.4 GB of NFS traffic on net1 since the last run (2026-12-06T01:00:00Z), none elsewhere"));
  CHECK(t.text.find("the host's tap of net1 counted 12.9 GB") != std::string::npos);
}

TEST_CASE("traffic since the last run that the intended tap did not carry is elsewhere, with the carrier") {
  Fixture f;
  f.move(5 * kGB, 2 * 1000 * 1000, 5200 * 1000 * 1000ull);  // established connection, route changed under it
  const auto t = f.since();
  INFO(t.text);
  CHECK(t.finding == TrafficFinding::elsewhere);
  REQUIRE(t.carrier);
  CHECK(*t.carrier == 2);
  CHECK(t.text.find("the host's tap of net1 counted 2.0 MB and net2's 5.2 GB") != std::string::npos);
  CHECK_FALSE(t.evidence.empty());
}

TEST_CASE("traffic on connections from another interface is elsewhere by the guest's own counters") {
  Fixture f;
  f.before.connections[0].connection.local_address = "192.0.2.10";
  f.now.connections[0].connection.local_address = "192.0.2.10";
  f.move(3 * kGB, 0, 3 * kGB);
  const auto t = f.since();
  INFO(t.text);
  CHECK(t.finding == TrafficFinding::elsewhere);
  CHECK(t.carrier_interface == "ens20");
  CHECK(t.text.find("on connections from ens20, not ens19") != std::string::npos);
}

TEST_CASE("an idle path since the last run rests on the address check") {
  Fixture f;
  f.move(40 * 1000, 0, 0);  // lease renewals
  const auto t = f.since();
  CHECK(t.finding == TrafficFinding::idle);
  CHECK(t.text.starts_with("no NFS traffic since the last run (2026-12-06T01:00:00Z)"));
  CHECK(t.text.ends_with("address check only"));
}

TEST_CASE("new connections, counters that went down and missing tcp_info are no comparison, never traffic") {
  Fixture f;
  SECTION("a reconnect: the 4-tuple is new") {
    f.now.connections[0].connection.local_port = 902;
    f.move(5 * kGB, 0, 5 * kGB);
    const auto t = f.since();
    CHECK(t.finding == TrafficFinding::no_comparison);
    CHECK(t.text.find("new since the last run") != std::string::npos);
    CHECK(t.nfs_bytes == 0);
  }
  SECTION("the same 4-tuple with smaller counters is another socket") {
    f.now.connections[0].bytes_received = 10;
    const auto t = f.since();
    CHECK(t.finding == TrafficFinding::no_comparison);
    CHECK(t.text.find("counters went down") != std::string::npos);
  }
  SECTION("no tcp_info") {
    f.now.connections[0].bytes_received.reset();
    f.now.connections[0].bytes_acked.reset();
    CHECK(f.since().text.find("no tcp_info byte counters") != std::string::npos);
  }
  SECTION("no NFS connection now") {
    f.now.connections.clear();
    CHECK(f.since().text.find("no NFS connections now") != std::string::npos);
  }
}

TEST_CASE("taps of a restarted, migrated or re-plugged VM are not compared, and never make elsewhere") {
  Fixture f;
  f.move(5 * kGB, 0, 5 * kGB);  // would be elsewhere if the taps were comparable
  std::string why;
  SECTION("restarted") {
    f.now.pid = 5000;
    why = "the VM was restarted since the last run";
  }
  SECTION("migrated") {
    f.now.node = "pve2";
    why = "the VM moved from node pve1 to pve2";
  }
  SECTION("net1 re-plugged") {
    f.now.nic_lines[1] = "virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8";
    why = "net1 was changed since the last run";
  }
  SECTION("the tap's counters went down") {
    f.now.taps[1] = {0, 0};
    why = "restarted its counters";
  }
  SECTION("the last run read no taps") {
    f.before.taps_unavailable = "Proxmox sent no tap counters";
    why = "the last run read none";
  }
  const auto t = f.since();
  INFO(t.text);
  CHECK(t.finding == TrafficFinding::carried);  // the guest's connections carried it on ens19
  CHECK(t.text.find("the host's taps not compared: ") != std::string::npos);
  CHECK(t.text.find(why) != std::string::npos);
}

TEST_CASE("an intended tap short of the NFS bytes with no other tap to carry them decides nothing") {
  Fixture f;
  f.move(5 * kGB, 1000, 1000);
  const auto t = f.since();
  CHECK(t.finding == TrafficFinding::no_comparison);
  CHECK(t.text.find("no other tap accounts for them") != std::string::npos);
}

TEST_CASE("replies in over the intended NIC and requests out over another is elsewhere, asymmetric") {
  Fixture f;
  f.move(5 * kGB, 5100 * 1000 * 1000ull, 0);             // the reads' data came back over net1
  *f.now.connections[0].bytes_acked += 6 * 1000 * 1000;  // requests and acknowledgements the guest sent
  f.now.taps[1].guest_tx += 2000;                        // ... not over net1
  f.now.taps[2].guest_tx += 6500 * 1000;                 // but over net2
  const auto t = f.since();
  INFO(t.text);
  CHECK(t.finding == TrafficFinding::elsewhere);
  CHECK(t.asymmetric);
  REQUIRE(t.carrier);
  CHECK(*t.carrier == 2);
  CHECK(t.text.find("the 6.0 MB the guest sent took net2 (6.5 MB out), not net1 (2.0 kB): the path is asymmetric") !=
        std::string::npos);
  // The same with the guest's sending on net1 as well: carried.
  f.now.taps[1].guest_tx += 6500 * 1000;
  f.now.taps[2].guest_tx -= 6500 * 1000;
  CHECK(f.since().finding == TrafficFinding::carried);
}
