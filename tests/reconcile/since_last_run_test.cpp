// SPDX-License-Identifier: GPL-3.0-or-later
// A converged path proven on every run by its traffic since the last one (issue 38, item 3): the
// NFS connections' tcp_info bytes from the facts and the VM's taps from one read per node, kept
// with the stored result; a misroute under established connections found without a probe; counter
// resets and reconnects are "no comparison", never traffic.
#include <catch2/catch.hpp>

#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;

namespace {

constexpr std::uint64_t kGB = 1000ull * 1000 * 1000;

SimulatedGuests::Mount& movies_mount(SeedWorld& w) {
  for (auto& m : w.guest().mounts) {
    if (m.mount_point == "/mnt/movies") return m;
  }
  throw std::runtime_error("/mnt/movies is not mounted");
}

// The seed fixed (a verified change), then one converged run that stores the first mark.
struct Converged {
  SeedWorld w;
  reconcile::Engine engine = w.engine();
  std::vector<policy::StoragePath> policies = movies_policy("[vers=3, _netdev]", false);

  Converged() {
    REQUIRE(entry(engine.reconcile(policies, false), "movies-10g").verdict == report::Verdict::verified);
    movies_mount(w).rx_bytes = 5000;
    movies_mount(w).tx_bytes = 5000;
    w.vm().nics = {{0, {10, 10}}, {1, {1000, 1000}}, {2, {1000, 1000}}};
    const auto first = engine.reconcile(policies, false);
    const auto& p = entry(first, "movies-10g");
    REQUIRE(p.verdict == report::Verdict::converged);
    REQUIRE(p.rests_on);
    CHECK(p.rests_on->starts_with("no comparison with the last run: it stored no counters"));
  }
  // Reads of `bytes` over the mount's connection, the taps of net1 and net2 moving as given.
  void traffic(std::uint64_t bytes, std::uint64_t net1, std::uint64_t net2) {
    *movies_mount(w).rx_bytes += bytes;
    w.vm().nics[1].netin += net1;
    w.vm().nics[2].netin += net2;
  }
};

}  // namespace

TEST_CASE("a converged run says how much NFS traffic the intended NIC carried since the last run") {
  Converged c;
  const int node_reads = c.w.pve.node_reads, vm_reads = c.w.pve.reads;
  c.traffic(12400 * 1000 * 1000ull, 12900 * 1000 * 1000ull, 5000);
  const auto r = c.engine.reconcile(c.policies, false);
  INFO(text(r));
  const auto& p = entry(r, "movies-10g");
  CHECK(p.verdict == report::Verdict::converged);
  CHECK(report::exit_code(r) == 0);
  REQUIRE(p.rests_on);
  CHECK(p.rests_on->starts_with("12.4 GB of NFS traffic on net1 since the last run ("));
  CHECK(p.rests_on->find("none elsewhere; the host's tap of net1 counted 12.9 GB") != std::string::npos);
  CHECK(text(r).find("rests on: 12.4 GB of NFS traffic on net1") != std::string::npos);
  // The taps cost one read for the node; the converged VM no status read of its own.
  CHECK(c.w.pve.node_reads == node_reads + 1);
  CHECK(c.w.pve.reads == vm_reads + 2);  // the cluster list and its config (GET .../pending) only
  // The next run compares with this one, not the first.
  const auto again = c.engine.reconcile(c.policies, false);
  REQUIRE(entry(again, "movies-10g").rests_on);
  CHECK(entry(again, "movies-10g").rests_on->starts_with("no NFS traffic since the last run"));
}

TEST_CASE("traffic the intended tap did not carry since the last run is wrong-path, found without a probe") {
  Converged c;
  const auto probes = std::count(c.w.guests.calls.begin(), c.w.guests.calls.end(), "probe media-vm");
  const auto writes = c.w.pve.writes;
  // A rule sends the established connection's packets out of the old link: its source address
  // (and so the address check) stays right, the bytes do not.
  c.traffic(5 * kGB, 2 * 1000 * 1000, 5200 * 1000 * 1000ull);
  const auto r = c.engine.reconcile(c.policies, false);
  INFO(text(r));
  const auto& p = entry(r, "movies-10g");
  CHECK(p.verdict == report::Verdict::wrong_path);
  CHECK(report::exit_code(r) == 4);
  REQUIRE(p.verification);
  REQUIRE(p.verification->diagnosis);
  CHECK(p.verification->diagnosis->starts_with("misrouted"));
  CHECK(p.verification->carried_by == std::optional<std::string>("net2"));
  CHECK_FALSE(p.verification->remedies.empty());
  CHECK(p.rests_on->find("the host's tap of net1 counted 2.0 MB and net2's 5.2 GB") != std::string::npos);
  CHECK(std::count(c.w.guests.calls.begin(), c.w.guests.calls.end(), "probe media-vm") == probes);
  CHECK(c.w.pve.writes == writes);  // routing is reported, never changed
  // The result stored says so: status, the Prometheus file and the history.
  auto stored = c.w.results.get("movies-10g");
  REQUIRE(stored);
  REQUIRE(*stored);
  CHECK((*stored)->verdict == "wrong-path");
  CHECK((*stored)->history.back().as_object().at("verdict").as_string() == "wrong-path");
  // --check on the next interval says the same when the bytes still go that way.
  c.traffic(1 * kGB, 1000, 1 * kGB + 50 * 1000 * 1000);
  CHECK(entry(c.engine.reconcile(c.policies, true), "movies-10g").verdict == report::Verdict::wrong_path);
}

TEST_CASE("replies over the intended NIC, requests out over another: wrong-path, asymmetric") {
  Converged c;
  c.traffic(5 * kGB, 5100 * 1000 * 1000ull, 0);
  *movies_mount(c.w).tx_bytes += 6 * 1000 * 1000;
  c.w.vm().nics[1].netout += 2000;
  c.w.vm().nics[2].netout += 6500 * 1000;
  const auto r = c.engine.reconcile(c.policies, false);
  INFO(text(r));
  const auto& p = entry(r, "movies-10g");
  CHECK(p.verdict == report::Verdict::wrong_path);
  CHECK(report::exit_code(r) == 4);
  REQUIRE(p.verification);
  REQUIRE(p.verification->diagnosis);
  CHECK(p.verification->diagnosis->starts_with("asymmetric: "));
  CHECK(p.verification->carried_by == std::optional<std::string>("net2"));
}

TEST_CASE("a reconnect, a VM restart and a run without a mark are never taken for traffic elsewhere") {
  Converged c;
  SECTION("the mount's connection was made anew (another local port)") {
    movies_mount(c.w).local_port = 812;
    c.traffic(5 * kGB, 0, 5 * kGB);
    const auto r = c.engine.reconcile(c.policies, false);
    INFO(text(r));
    CHECK(entry(r, "movies-10g").verdict == report::Verdict::converged);
    CHECK(entry(r, "movies-10g").rests_on->find("new since the last run") != std::string::npos);
  }
  SECTION("the VM restarted: another QEMU process, its taps from zero") {
    c.w.vm().pid += 1;
    c.w.vm().nics = {{0, {0, 0}}, {1, {0, 0}}, {2, {5 * kGB, 0}}};
    *movies_mount(c.w).rx_bytes += 5 * kGB;
    const auto r = c.engine.reconcile(c.policies, false);
    INFO(text(r));
    CHECK(entry(r, "movies-10g").verdict == report::Verdict::converged);
    CHECK(entry(r, "movies-10g").rests_on->find("the VM was restarted since the last run") != std::string::npos);
  }
  SECTION("the stored mark is unreadable") {
    auto stored = c.w.results.get("movies-10g");
    REQUIRE(stored);
    REQUIRE(*stored);
    auto res = **stored;
    res.details["traffic_mark"] = boost::json::object{{"taken_at", 7}};
    REQUIRE(c.w.results.put(res));
    c.traffic(5 * kGB, 0, 5 * kGB);
    const auto r = c.engine.reconcile(c.policies, false);
    CHECK(entry(r, "movies-10g").verdict == report::Verdict::converged);
    CHECK(entry(r, "movies-10g").rests_on->starts_with("no comparison with the last run: it stored no counters"));
  }
  SECTION("the node's VM list cannot be read: guest-side only") {
    c.w.pve.fail_node_lists = true;
    c.traffic(5 * kGB, 0, 5 * kGB);
    const auto r = c.engine.reconcile(c.policies, false);
    INFO(text(r));
    CHECK(entry(r, "movies-10g").verdict == report::Verdict::converged);
    CHECK(entry(r, "movies-10g").rests_on->find("the host's taps not compared: the node's VM list could not be read") !=
          std::string::npos);
  }
}

TEST_CASE("a run that changes nothing of the path keeps the last mark for the next") {
  Converged c;
  // `verify` stores its result (whatever its verdict) without a mark; the next converged run
  // still compares with the mark before it.
  const auto audit = c.engine.audit(c.policies, false);
  REQUIRE(c.w.results.get("movies-10g").value()->run_id == audit.run_id);
  c.traffic(3 * kGB, 3100 * 1000 * 1000ull, 0);
  const auto r = c.engine.reconcile(c.policies, false);
  INFO(text(r));
  REQUIRE(entry(r, "movies-10g").rests_on);
  CHECK(entry(r, "movies-10g").rests_on->find("of NFS traffic on net1 since the last run") != std::string::npos);
}

TEST_CASE("a mount found trunked between runs is re-made by reconcile and verified like any change") {
  Converged c;
  // NFSv4.1 trunking after a remount by hand: mounted by the new address, riding the old link's
  // transport (addr= the old address).
  movies_mount(c.w).addr = kOldLink;
  const auto check = c.engine.reconcile(c.policies, true);
  INFO(text(check));
  const auto& planned = entry(check, "movies-10g");
  CHECK(planned.verdict == report::Verdict::drift);
  REQUIRE_FALSE(planned.planned.empty());
  CHECK(planned.planned.front().text.find("(trunked: mounted as 198.51.100.2") != std::string::npos);
  const auto r = c.engine.reconcile(c.policies, false);
  INFO(text(r));
  CHECK(entry(r, "movies-10g").verdict == report::Verdict::verified);
  CHECK(report::exit_code(r) == 2);
  CHECK(movies_mount(c.w).addr == kNewLink);
}
