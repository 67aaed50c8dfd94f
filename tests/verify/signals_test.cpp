// SPDX-License-Identifier: GPL-3.0-or-later
// The three-sided verification (issue 19): the host's tap counters and the NFS connections' own
// bytes beside the guest's interface counters, and how the verifier weighs them. Each case is a
// way the guest's counters alone were fooled on the QEMU lab, or a probe that cannot prove anything.
#include <catch2/catch.hpp>

#include "lab_fixture.hpp"
#include "verify/judges.hpp"

using namespace lab;

namespace {

constexpr std::uint64_t kMB = 1'000'000;

// Proxmox's tap counters around the probe run: per netN, guest rx (netin) moved by `rx`.
HostTapSamples taps(int intended, std::uint64_t net0_rx, std::uint64_t net1_rx, std::uint64_t net2_rx = 20'000) {
  HostTapSamples h;
  h.intended_net = intended;
  h.before = {{0, {5'000'000, 100}}, {1, {7'000'000, 100}}, {2, {9'000'000, 100}}};
  h.after = {{0, {5'000'000 + net0_rx, 200}}, {1, {7'000'000 + net1_rx, 200}}, {2, {9'000'000 + net2_rx, 300}}};
  return h;
}

ConnectionCounters conn(const char* local, std::uint16_t port, const char* remote, std::uint64_t received) {
  return {{local, port, remote, 2049}, received, 1000};
}

// One connection whose bytes_received grew by `moved` across the probe.
ConnectionSamples one_connection(const char* local, std::uint16_t port, const char* remote, std::uint64_t moved) {
  return {{conn(local, port, remote, 10'000'000)}, {conn(local, port, remote, 10'000'000 + moved)}};
}

const SignalReading& signal(const VerificationResult& r, Signal s) {
  for (const auto& x : r.signals)
    if (x.signal == s) return x;
  throw std::runtime_error("no reading of " + std::string(to_string(s)));
}

}  // namespace

TEST_CASE("signal names are the report's") {
  CHECK(to_string(Signal::host_taps) == "host-taps");
  CHECK(to_string(Signal::connection_bytes) == "connection-bytes");
  CHECK(to_string(SignalState::contradicted) == "contradicted");
  CHECK(std::size(kSignals) == 4);
  CHECK(std::size(kSignalStates) == 4);
}

TEST_CASE("relabelled MACs: the guest counts link2, the host saw net0 carry the probe") {
  // The guest's interface that wears net1's MAC carried the bytes, but the host's tap of net1 did
  // not: whatever the guest's MACs say, the probe took net0.
  auto m = measure({link1(1'000), link2(kProbe64MiB + 300'000), mgmt()}, kProbe64MiB);
  m.host = taps(1, kProbe64MiB + 400'000, 30'000);
  const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
  CHECK(r.verdict == Verdict::wrong_path);
  CHECK(r.decided_by == Signal::host_taps);
  CHECK(r.carrier_net == 0);
  CHECK(r.summary.find("net0 carried") != std::string::npos);
  CHECK(signal(r, Signal::guest_counters).state == SignalState::agreed);
  CHECK(signal(r, Signal::host_taps).state == SignalState::contradicted);
}

TEST_CASE("the host agreeing adds to a verified path; without taps it is guest-side only") {
  auto m = measure({link1(1'000), link2(kProbe64MiB + 300'000), mgmt()}, kProbe64MiB);
  SECTION("taps agree") {
    m.host = taps(1, 2'000, kProbe64MiB + 500'000);
    const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
    CHECK(r.verdict == Verdict::verified);
    CHECK(signal(r, Signal::host_taps).state == SignalState::agreed);
  }
  SECTION("no taps") {
    m.host.unavailable = "guest-side only: Proxmox sent no tap counters";
    const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
    CHECK(r.verdict == Verdict::verified);
    CHECK(r.decided_by == Signal::guest_counters);
    CHECK(signal(r, Signal::host_taps).state == SignalState::unavailable);
    CHECK(signal(r, Signal::host_taps).detail.find("guest-side only") != std::string::npos);
  }
  SECTION("a tap that restarted says nothing") {
    m.host = taps(1, 0, kProbe64MiB);
    m.host.after[1].guest_rx = 10;  // below its value before: re-created
    const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
    CHECK(r.verdict == Verdict::verified);
    CHECK(signal(r, Signal::host_taps).state == SignalState::undecided);
  }
}

TEST_CASE(
    "coinciding background: link2 carried a probe's worth of someone else's bytes while the trunked probe rode link1") {
  // link1's own background stopped as the probe started (its raw bytes equal its baseline's
  // prediction), and a transfer of the probe's size ran on link2: the interface counters alone
  // say "verified".
  const Timing t{};
  Lane l1 = link1(kProbe64MiB);
  l1.baseline_rx = static_cast<std::uint64_t>(static_cast<double>(kProbe64MiB) * t.baseline_s / t.probe_s);
  auto m = measure({l1, link2(kProbe64MiB + 200'000), mgmt()}, kProbe64MiB, ProbeDirection::read, t);
  SECTION("the connections' bytes name link1") {
    m.connections = one_connection("192.0.2.10", 977, "192.0.2.2", kProbe64MiB + 150'000);
    const auto r = verify_path(input(movies_via_link2(), trunked_evidence(), m));
    CHECK(r.verdict == Verdict::wrong_path);
    CHECK(r.decided_by == Signal::connection_bytes);
    CHECK(r.summary.find("link1") != std::string::npos);
    CHECK(signal(r, Signal::guest_counters).state == SignalState::agreed);
    REQUIRE(r.diagnosis);
    CHECK(r.diagnosis->kind == DiagnosisKind::trunked);
  }
  SECTION("without connection bytes the trunked mount still vetoes verified") {
    const auto r = verify_path(input(movies_via_link2(), trunked_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.decided_by == Signal::connection_interface);
    CHECK(signal(r, Signal::connection_bytes).state == SignalState::unavailable);
    CHECK(signal(r, Signal::connection_interface).state == SignalState::contradicted);
  }
}

TEST_CASE("5 MB/s of background on the intended link: the connections' bytes decide at 4 MiB") {
  constexpr std::uint64_t probe = 4ull << 20;
  Lane l2 = link2(probe + 7 * kMB);  // the probe plus 1.35 s of 5 MB/s
  l2.baseline_rx = 5 * kMB;
  auto m = measure({link1(2'000), l2, mgmt()}, probe);
  const auto counters_only = verify_path(input(movies_via_link2(), clean_evidence(), m));
  CHECK(counters_only.verdict == Verdict::inconclusive);
  m.connections = one_connection("198.51.100.10", 957, "198.51.100.2", probe + 40'000);
  const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
  CHECK(r.verdict == Verdict::verified);
  CHECK(r.decided_by == Signal::connection_bytes);
  CHECK(signal(r, Signal::guest_counters).state == SignalState::undecided);
  CHECK(signal(r, Signal::connection_bytes).state == SignalState::agreed);
}

TEST_CASE("connection bytes on link2 but link2's counters never saw them: the replies took another link") {
  auto m = measure({link1(kProbe64MiB + 100'000), link2(3'000), mgmt()}, kProbe64MiB);
  m.connections = one_connection("198.51.100.10", 957, "198.51.100.2", kProbe64MiB);
  const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
  CHECK(r.verdict == Verdict::wrong_path);
  CHECK(r.decided_by == Signal::guest_counters);
}

TEST_CASE("connections of other NFS traffic on link1 and the probe's on link2 are told apart") {
  auto m = measure({link1(30 * kMB), link2(kProbe64MiB + 100'000), mgmt()}, kProbe64MiB);
  m.connections = {{conn("198.51.100.10", 957, "198.51.100.2", 1), conn("192.0.2.10", 977, "192.0.2.2", 1)},
                   {conn("198.51.100.10", 957, "198.51.100.2", 1 + kProbe64MiB),
                    conn("192.0.2.10", 977, "192.0.2.2", 1 + 30 * kMB)}};
  auto e = clean_evidence();
  e.connections.push_back({"192.0.2.10", 977, "192.0.2.2", 2049});
  e.mounts.push_back(mount("192.0.2.2:/export", "/mnt/a", "nfs4", kV42OptsViaA));
  const auto a = analyze_connections(m.connections, movies_via_link2(), e, ProbeDirection::read);
  CHECK(a.intended_bytes == kProbe64MiB);
  CHECK(a.other_bytes == 30 * kMB);
  CHECK(a.busiest_other == "link1");
  // 30 MB elsewhere is under half the probe: the probe's own bytes are on link2.
  const auto r = verify_path(input(movies_via_link2(), e, m));
  CHECK(signal(r, Signal::connection_bytes).state == SignalState::agreed);
}

TEST_CASE("connection counters: new, closed and unattributed connections") {
  const auto d = movies_via_link2();
  auto e = clean_evidence();
  ConnectionSamples s;
  s.before = {conn("198.51.100.10", 957, "198.51.100.2", 100)};
  s.after = {conn("198.51.100.10", 958, "198.51.100.2", 5000), conn("10.9.9.9", 1, "198.51.100.2", 700)};
  const auto a = analyze_connections(s, d, e, ProbeDirection::read);
  CHECK(a.counters_available);
  CHECK(a.intended_bytes == 5000);  // the reconnect's whole count
  CHECK(a.unattributed_bytes == 700);
  CHECK(a.notes.size() == 3);  // two opened, one closed
  SECTION("no tcp_info: unavailable, said why") {
    ConnectionSamples bare;
    bare.before = {{{"198.51.100.10", 957, "198.51.100.2", 2049}, std::nullopt, std::nullopt}};
    bare.after = bare.before;
    const auto none = analyze_connections(bare, d, e, ProbeDirection::read);
    CHECK_FALSE(none.counters_available);
    const auto reading = judge_connections(none, ProbeRun{kProbe64MiB}, VerifySettings{});
    CHECK(reading.state == SignalState::unavailable);
    CHECK(reading.detail.find("inet_diag") != std::string::npos);
  }
}

TEST_CASE("the probe itself: a missing or short probe file and a removed mount are preconditions") {
  auto m = measure({link1(0), link2(0), mgmt()}, kProbe64MiB);
  auto d = movies_via_link2();
  d.probe_file = "/mnt/b/probe-64m";
  SECTION("missing file") {
    m.probe.bytes = 0;
    m.probe.requested_bytes = kProbe64MiB;
    m.probe.open_error = "No such file or directory";
    const auto r = verify_path(input(d, clean_evidence(), m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "the probe file /mnt/b/probe-64m cannot be read: No such file or directory");
    CHECK(r.failed_preconditions.front().hint.find("dd if=/dev/urandom of=/mnt/b/probe-64m bs=1M count=64") !=
          std::string::npos);
  }
  SECTION("a stale file handle, at the open or during the read, is named with its remedy") {
    m.probe.bytes = 0;
    m.probe.requested_bytes = kProbe64MiB;
    SECTION("at the open") {
      m.probe.open_error = "Stale file handle";
    }
    SECTION("during the read") {
      m.probe.error = "dd: error reading '/mnt/b/probe-64m': Stale file handle";
    }
    const auto r = verify_path(input(d, clean_evidence(), m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary ==
          "the NAS no longer knows /mnt/b's file handles (Stale file handle: its export was re-created, or it "
          "restarted without persistent handles)");
    CHECK(r.failed_preconditions.front().hint.find("umount -l /mnt/b") != std::string::npos);
  }
  SECTION("a write probe's file that is already there is never overwritten: a precondition, said so") {
    m.probe.direction = ProbeDirection::write;
    m.probe.bytes = 0;
    m.probe.requested_bytes = kProbe64MiB;
    m.probe.open_error = "File exists";  // dd conv=excl refused to open it
    m.probe.file_existed = true;
    const auto r = verify_path(input(d, clean_evidence(), m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "the write probe's file /mnt/b/probe-64m already exists; pathwarden never overwrites a file");
    CHECK(r.failed_preconditions.front().hint.find("interrupted") != std::string::npos);
  }
  SECTION("short file") {
    m.probe.bytes = 1u << 20;
    m.probe.requested_bytes = kProbe64MiB;
    const auto r = verify_path(input(d, clean_evidence(), m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary.find("holds only 1.0 MiB, the probe reads 64.0 MiB") != std::string::npos);
  }
  SECTION("the mount was removed behind pathwarden's back") {
    m.probe.bytes = 0;
    m.probe.requested_bytes = kProbe64MiB;
    m.probe.open_error = "No such file or directory";
    auto e = clean_evidence();
    e.mounts.clear();
    e.connections.clear();
    const auto r = verify_path(input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "/mnt/b is not mounted");
  }
  SECTION("dd failed midway: inconclusive, said so") {
    m.probe.error = "dd: error reading '/mnt/b/probe-64m': Input/output error";
    const auto r = verify_path(input(d, clean_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.summary.find("Input/output error") != std::string::npos);
    CHECK(r.advice.next == NextStep::give_up);
  }
}

TEST_CASE("a link that moved far less than its baseline predicts is measured again, not netted to a deficit") {
  // link1 moved 60 MB/s in the baseline and nothing while the probe ran: its background changed,
  // so no net figure of this window means anything.
  Lane l1 = link1(1'000);
  l1.baseline_rx = 60 * kMB;
  auto m = measure({l1, link2(kProbe64MiB + 100'000), mgmt()}, kProbe64MiB);
  const auto r = verify_path(input(movies_via_link2(), clean_evidence(), m));
  CHECK(r.verdict == Verdict::inconclusive);
  CHECK(r.advice.next == NextStep::remeasure);
  CHECK(r.summary.find("link1 moved") != std::string::npos);
  CHECK(r.summary.find("background changed") != std::string::npos);
  SECTION("the connections' own bytes need no background model") {
    m.connections = one_connection("198.51.100.10", 957, "198.51.100.2", kProbe64MiB);
    const auto v = verify_path(input(movies_via_link2(), clean_evidence(), m));
    CHECK(v.verdict == Verdict::verified);
    CHECK(v.decided_by == Signal::connection_bytes);
  }
}

TEST_CASE("the host's window holds the whole probe: background only adds") {
  const auto probe = ProbeRun{kProbe64MiB};
  SECTION("intended tap short of the share, another carried it") {
    const auto j = judge_host_taps(taps(1, kProbe64MiB, 1'000), probe, VerifySettings{});
    CHECK(j.reading.state == SignalState::contradicted);
    CHECK(j.carrier == 0);
  }
  SECTION("intended tap short, nobody carried it") {
    const auto j = judge_host_taps(taps(1, 1'000, 1'000), probe, VerifySettings{});
    CHECK(j.reading.state == SignalState::undecided);
  }
  SECTION("intended tap carried more than the probe (background on top)") {
    const auto j = judge_host_taps(taps(1, kProbe64MiB, 3 * kProbe64MiB), probe, VerifySettings{});
    CHECK(j.reading.state == SignalState::agreed);
  }
  SECTION("no counters for the intended NIC") {
    auto h = taps(3, 0, 0);
    const auto j = judge_host_taps(h, probe, VerifySettings{});
    CHECK(j.reading.state == SignalState::unavailable);
    CHECK(j.reading.detail.find("net3") != std::string::npos);
  }
}
