// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/verifier.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "lab_fixture.hpp"

using namespace pw::verify;
using lab::Lane;

namespace {

bool has_remedy(const PathDiagnosis& d, RemedyKind k) {
  return std::any_of(d.remedies.begin(), d.remedies.end(), [&](const Remedy& r) { return r.kind == k; });
}

const Remedy& remedy(const PathDiagnosis& d, RemedyKind k) {
  for (const auto& r : d.remedies)
    if (r.kind == k) return r;
  FAIL("no remedy " << to_string(k));
  throw std::logic_error("unreachable");
}

bool mentions(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

const CounterDelta& delta(const VerificationResult& r, const std::string& name) {
  return lab::find_delta(r.deltas, name);
}

}  // namespace

TEST_CASE("verdict names are the contract's") {
  CHECK(to_string(Verdict::verified) == "verified");
  CHECK(to_string(Verdict::wrong_path) == "wrong-path");
  CHECK(to_string(Verdict::inconclusive) == "inconclusive");
  CHECK(to_string(Verdict::precondition_failed) == "precondition-failed");
}

TEST_CASE("lab control: a v4.2 mount through B alone is verified on link2") {
  // v42Bonly: link1 0, link2 68,394,218 B for a 64 MiB O_DIRECT read in 1.13 s.
  const auto m = lab::measure({lab::link1(0), lab::link2(68'394'218), lab::mgmt()}, lab::kProbe64MiB,
                              ProbeDirection::read, {1.0, 0.2, 1.13});
  const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
  CHECK(r.verdict == Verdict::verified);
  REQUIRE(r.intended_share);
  CHECK(*r.intended_share == Approx(68'394'218.0 / 67'108'864.0));
  CHECK(r.deltas.front().name == "link2");
  CHECK(r.deltas.front().intended);
  CHECK_FALSE(r.diagnosis);
  CHECK(r.advice.next == NextStep::none);
  REQUIRE(r.throughput);
  CHECK(*r.throughput == Approx(67'108'864.0 / 1.13));
  CHECK(r.summary.find("link2") != std::string::npos);
}

TEST_CASE("lab: vers=3 through B beside a v4.2 mount through A is verified") {
  auto e = lab::clean_evidence();
  e.mounts = {lab::mount("192.0.2.2:/export", "/mnt/a", "nfs4", lab::kV42OptsViaA),
              lab::mount("198.51.100.2:/export", "/mnt/b", "nfs", lab::kV3OptsViaB)};
  e.connections = {{"192.0.2.10", 720, "192.0.2.2", 2049}, {"198.51.100.10", 873, "198.51.100.2", 2049}};
  const auto m = lab::measure({lab::link1(0), lab::link2(67'644'500), lab::mgmt()}, lab::kProbe64MiB,
                              ProbeDirection::read, {1.0, 0.2, 0.96});
  const auto r = verify_path(lab::input(lab::movies_via_link2("3"), e, m));
  CHECK(r.verdict == Verdict::verified);
  CHECK(*r.intended_share > 1.0);
}

TEST_CASE("lab trap: the mount through link2's address is trunked onto link1") {
  // v42trunk: 64 MiB read via /mnt/b: link1 rx 67,832,136 B, link2 0, 1.35 s.
  const auto m = lab::measure({lab::link1(67'832'136), lab::link2(0), lab::mgmt()}, lab::kProbe64MiB);
  const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::trunked_evidence(), m));
  CHECK(r.verdict == Verdict::wrong_path);
  CHECK(r.failed_preconditions.empty());
  CHECK(*r.intended_share == 0.0);
  CHECK(delta(r, "link1").rx_net == 67'832'136);
  CHECK(delta(r, "link2").rx_net == 0);
  REQUIRE(r.diagnosis);
  CHECK(r.diagnosis->kind == DiagnosisKind::trunked);
  CHECK(mentions(r.diagnosis->evidence, "addr=192.0.2.2"));
  CHECK(mentions(r.diagnosis->evidence, "did not add transport to server: 192.0.2.2"));
  CHECK(mentions(r.diagnosis->evidence, "1 connection(s) to the NAS: 192.0.2.2:2049 from 192.0.2.10 (link1)"));
  CHECK(mentions(r.diagnosis->evidence, "link1 received 67.8 MB"));
  CHECK(has_remedy(*r.diagnosis, RemedyKind::pin_nfs_v3));
  REQUIRE_FALSE(r.diagnosis->remedies.empty());
  CHECK(r.diagnosis->remedies.front().kind == RemedyKind::move_transport);  // NFSv4 kept, offered first
  CHECK_THAT(r.diagnosis->remedies.front().text, Catch::Contains("from 192.0.2.2 to 198.51.100.2"));
  const auto& remake = remedy(*r.diagnosis, RemedyKind::remount_all_of_server);
  CHECK(remake.mount_points == std::vector<std::string>{"/mnt/a", "/mnt/b"});
  CHECK_FALSE(has_remedy(*r.diagnosis, RemedyKind::fix_route));
  CHECK(r.summary.find("link1 101%") != std::string::npos);
}

TEST_CASE("lab trap variants: second export, v4.1, nconnect=4 all diagnose as trunked") {
  struct Row {
    const char* name;
    std::uint64_t link1_rx;
    const char* vers;
    const char* opts_extra;
    unsigned transports;
  };
  const Row rows[] = {
      {"v42trunk_exp2", 67'590'344, "4.2", "", 1},
      {"v41trunk", 67'672'652, "4.1", "", 1},
      {"nconnect4", 67'728'396, "4.2", ",nconnect=4", 4},
  };
  for (const auto& row : rows) {
    INFO(row.name);
    auto e = lab::trunked_evidence();
    std::string opts = std::string(lab::kV42OptsViaA) + row.opts_extra;
    if (std::string(row.vers) == "4.1") opts.replace(opts.find("vers=4.2"), 8, "vers=4.1");
    e.mounts = {lab::mount("192.0.2.2:/export", "/mnt/a", "nfs4", opts),
                lab::mount("198.51.100.2:/export2", "/mnt/b", "nfs4", opts)};
    e.transport_count = row.transports;
    auto d = lab::movies_via_link2(row.vers);
    if (row.transports > 1) d.nconnect = row.transports;
    const auto m = lab::measure({lab::link1(row.link1_rx), lab::link2(0)}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::wrong_path);
    REQUIRE(r.diagnosis);
    CHECK(r.diagnosis->kind == DiagnosisKind::trunked);
  }
}

TEST_CASE("lab: max_connect=2 splits the bytes across both links: wrong path, trunked") {
  // maxconnect2: link1 33,981,030 B, link2 34,042,048 B.
  auto e = lab::trunked_evidence();
  const std::string opts = std::string(lab::kV42OptsViaA) + ",max_connect=2";
  e.mounts = {lab::mount("192.0.2.2:/export", "/mnt/a", "nfs4", opts),
              lab::mount("192.0.2.2:/export", "/mnt/b", "nfs4", opts)};
  e.connections = {{"198.51.100.10", 808, "198.51.100.2", 2049}, {"192.0.2.10", 767, "192.0.2.2", 2049}};
  e.kernel_messages.clear();
  e.transport_count = 2;
  const auto m = lab::measure({lab::link1(33'981'030), lab::link2(34'042'048)}, lab::kProbe64MiB, ProbeDirection::read,
                              {1.0, 0.2, 1.12});
  const auto r = verify_path(lab::input(lab::movies_via_link2(), e, m));
  CHECK(r.verdict == Verdict::wrong_path);
  CHECK(*r.intended_share == Approx(0.507).epsilon(0.01));
  REQUIRE(r.diagnosis);
  CHECK(r.diagnosis->kind == DiagnosisKind::trunked);
  CHECK(has_remedy(*r.diagnosis, RemedyKind::drop_max_connect));
  CHECK(mentions(r.diagnosis->evidence, "link1 received"));
  CHECK(mentions(r.diagnosis->evidence, "link2 (intended) received"));
}

TEST_CASE("traffic split across NICs: the intended share decides") {
  struct Row {
    double link2_share;
    Verdict verdict;
  };
  const Row rows[] = {
      {1.004, Verdict::verified},  {0.95, Verdict::verified},   {0.92, Verdict::verified},
      {0.85, Verdict::wrong_path}, {0.50, Verdict::wrong_path}, {0.0, Verdict::wrong_path},
  };
  const double p = static_cast<double>(lab::kProbe64MiB) * 1.004;  // NFS overhead on the wire
  for (const auto& row : rows) {
    INFO("link2 share " << row.link2_share);
    const auto on2 = static_cast<std::uint64_t>(p * row.link2_share);
    const auto on1 = static_cast<std::uint64_t>(p * 1.004) - on2;
    const auto m = lab::measure({lab::link1(on1), lab::link2(on2), lab::mgmt()}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == row.verdict);
    CHECK(*r.intended_share == Approx(row.link2_share * 1.004).epsilon(0.001));
    CHECK(r.diagnosis.has_value() == (row.verdict == Verdict::wrong_path));
  }
}

TEST_CASE("misrouted: addr= is right, but the route sends the connection out of link1") {
  auto e = lab::clean_evidence();
  // A /32 route for B's address through link1: the connection leaves from link1's address.
  e.connections = {{"192.0.2.10", 901, "198.51.100.2", 2049}};
  const auto m = lab::measure({lab::link1(67'345'348), lab::link2(0), lab::mgmt()}, lab::kProbe64MiB);
  const auto r = verify_path(lab::input(lab::movies_via_link2(), e, m));
  CHECK(r.verdict == Verdict::wrong_path);
  REQUIRE(r.diagnosis);
  CHECK(r.diagnosis->kind == DiagnosisKind::misrouted);
  CHECK(has_remedy(*r.diagnosis, RemedyKind::fix_route));
  CHECK(remedy(*r.diagnosis, RemedyKind::fix_route).text.find("ip route get 198.51.100.2") != std::string::npos);
  CHECK(remedy(*r.diagnosis, RemedyKind::fix_route).text.find("dev link2") != std::string::npos);
  CHECK_FALSE(has_remedy(*r.diagnosis, RemedyKind::pin_nfs_v3));
  CHECK(mentions(r.diagnosis->evidence, "leaves from 192.0.2.10, an address of link1"));
}

TEST_CASE("misrouted: asymmetric return path, requests out of link2, replies in on link1") {
  // The lab's asymmetric route: tx on the intended link, rx on the other.
  const auto m = lab::measure({lab::link1(67'300'000, 0), lab::link2(0, 420'000)}, lab::kProbe64MiB);
  const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
  CHECK(r.verdict == Verdict::wrong_path);
  REQUIRE(r.diagnosis);
  CHECK(r.diagnosis->kind == DiagnosisKind::misrouted);
  CHECK(has_remedy(*r.diagnosis, RemedyKind::fix_return_route));
}

TEST_CASE("write probes are judged on tx") {
  SECTION("bytes out of the intended link") {
    const auto m =
        lab::measure({lab::link1(0, 0), lab::link2(1'200'000, 67'500'000)}, lab::kProbe64MiB, ProbeDirection::write);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::verified);
    CHECK(delta(r, "link2").tx_net == 67'500'000);
  }
  SECTION("rx on the intended link does not count for a write") {
    // Replies (acks) arrive on link2 while the data leaves through link1.
    const auto m =
        lab::measure({lab::link1(0, 67'500'000), lab::link2(67'200'000, 0)}, lab::kProbe64MiB, ProbeDirection::write);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::wrong_path);
    REQUIRE(r.diagnosis);
    CHECK(r.diagnosis->kind == DiagnosisKind::misrouted);
    CHECK(has_remedy(*r.diagnosis, RemedyKind::fix_route));
  }
}

TEST_CASE("noisy background is subtracted before the share is judged") {
  SECTION("steady background on both links: still verified") {
    // 3 MB/s on link2 and 8 MB/s on link1 in the baseline window, the same during the probe.
    Lane l1{"link1", lab::kLink1Mac, 8'000'000, 400'000, 10'800'000, 540'000, 1000};
    Lane l2{"link2", lab::kLink2Mac, 3'000'000, 100'000, 4'050'000 + 67'400'000, 135'000, 10000};
    const auto m = lab::measure({l1, l2, lab::mgmt()}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::verified);
    CHECK(*r.intended_share == Approx(67'400'000.0 / 67'108'864.0));
    CHECK(delta(r, "link2").rx_background == 4'050'000);
    CHECK(delta(r, "link1").rx_net == 0);
  }
  SECTION("a steady stream on link1 does not hide that the probe took it") {
    Lane l1{"link1", lab::kLink1Mac, 8'000'000, 0, 10'800'000 + 67'800'000, 0, 1000};
    const auto m = lab::measure({l1, lab::link2(0)}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::trunked_evidence(), m));
    CHECK(r.verdict == Verdict::wrong_path);
  }
  SECTION("background as strong as the probe on the intended link: inconclusive, growing cannot help") {
    Lane l2{"link2", lab::kLink2Mac, 40'000'000, 0, 54'000'000 + 67'400'000, 0, std::nullopt};
    const auto m = lab::measure({lab::link1(0), l2}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.advice.next == NextStep::give_up);
    CHECK(r.advice.reason.find("link2") != std::string::npos);
  }
  SECTION("the same background with the probe split across links: not enough on link2 is a wrong path") {
    Lane l2{"link2", lab::kLink2Mac, 40'000'000, 0, 54'000'000 + 30'000'000, 0, std::nullopt};
    const auto m = lab::measure({lab::link1(37'000'000), l2}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::wrong_path);
  }
  SECTION("a burst on another link while the intended one got the bytes: measure again") {
    const auto m = lab::measure({lab::link1(60'000'000), lab::link2(67'400'000)}, lab::kProbe64MiB);
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.advice.next == NextStep::remeasure);
  }
}

TEST_CASE("too little signal grows the probe, within its bound") {
  // A 256 KiB probe against three 64 KiB noise floors.
  const std::uint64_t small = 256 * 1024;
  const auto m = lab::measure({lab::link1(0), lab::link2(200'000), lab::mgmt()}, small);
  auto in = lab::input(lab::movies_via_link2(), lab::clean_evidence(), m);
  const auto r = verify_path(in);
  CHECK(r.verdict == Verdict::inconclusive);
  CHECK(r.advice.next == NextStep::grow_probe);
  CHECK(r.advice.probe_bytes > 2 * small);
  CHECK(r.advice.probe_bytes % (1u << 20) == 0);

  SECTION("the grown probe decides") {
    const auto m2 =
        lab::measure({lab::link1(0), lab::link2(r.advice.probe_bytes + 20'000), lab::mgmt()}, r.advice.probe_bytes);
    const auto r2 = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m2));
    CHECK(r2.verdict == Verdict::verified);
  }
  SECTION("at the maximum it ends inconclusive, never verified") {
    in.settings.max_probe_bytes = small;
    const auto r3 = verify_path(in);
    CHECK(r3.verdict == Verdict::inconclusive);
    CHECK(r3.advice.next == NextStep::give_up);
  }
  SECTION("the bound caps the growth") {
    in.settings.max_probe_bytes = 1u << 20;
    const auto r4 = verify_path(in);
    CHECK(r4.advice.next == NextStep::grow_probe);
    CHECK(r4.advice.probe_bytes == 1u << 20);
  }
}

TEST_CASE("background gathered while no probe ran shrinks against a bigger probe") {
  // The lab under TCG: 1 MB/s received on both links, a 4 MiB read done in 0.1 s inside a 10 s
  // counter window (the rest is starting the commands that read the counters and run dd).
  lab::Timing slow_window{.baseline_s = 5.0, .gap_s = 2.0, .probe_s = 10.0, .dd_s = 0.1};
  const std::uint64_t probe = 4ull << 20;
  Lane l1{"link1", lab::kLink1Mac, 5'000'000, 0, 10'000'000, 0, std::nullopt};
  Lane l2{"link2", lab::kLink2Mac, 5'000'000, 0, 10'000'000 + probe, 0, std::nullopt};
  auto in = lab::input(lab::movies_via_link2(), lab::clean_evidence(),
                       lab::measure({l1, l2, lab::mgmt()}, probe, ProbeDirection::read, slow_window));
  in.settings.max_probe_bytes = 64ull << 20;
  const auto r = verify_path(in);
  CHECK(r.verdict == Verdict::inconclusive);
  REQUIRE(r.advice.next == NextStep::grow_probe);
  CHECK(r.advice.probe_bytes > probe);
  CHECK(r.advice.probe_bytes <= in.settings.max_probe_bytes);

  SECTION("the grown probe, in a window stretched by its own run time only, decides") {
    const std::uint64_t grown = r.advice.probe_bytes;
    lab::Timing t = slow_window;
    t.dd_s = 0.1 * static_cast<double>(grown) / static_cast<double>(probe);
    t.probe_s = 10.0 - 0.1 + t.dd_s;
    const auto bg = static_cast<std::uint64_t>(1'000'000 * t.probe_s);
    Lane g1{"link1", lab::kLink1Mac, 5'000'000, 0, bg, 0, std::nullopt};
    Lane g2{"link2", lab::kLink2Mac, 5'000'000, 0, bg + grown, 0, std::nullopt};
    auto in2 = lab::input(lab::movies_via_link2(), lab::clean_evidence(),
                          lab::measure({g1, g2, lab::mgmt()}, grown, ProbeDirection::read, t));
    in2.settings.max_probe_bytes = 64ull << 20;
    CHECK(verify_path(in2).verdict == Verdict::verified);
  }
  SECTION("when the probe fills the whole window, its share of the background stays: give up") {
    lab::Timing busy = slow_window;
    busy.dd_s = 0;
    in.measurement = lab::measure({l1, l2, lab::mgmt()}, probe, ProbeDirection::read, busy);
    CHECK(verify_path(in).advice.next == NextStep::give_up);
  }
}

TEST_CASE("a probe whose bytes show nowhere is inconclusive (cached read)") {
  const auto m = lab::measure({lab::link1(0), lab::link2(0), lab::mgmt()}, lab::kProbe64MiB);
  const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
  CHECK(r.verdict == Verdict::inconclusive);
  CHECK(r.advice.next == NextStep::give_up);
  CHECK(r.advice.reason.find("O_DIRECT") != std::string::npos);
}

TEST_CASE("a counter reset re-bases instead of judging") {
  auto m = lab::measure({lab::link1(0), lab::link2(67'000'000)}, lab::kProbe64MiB);
  SECTION("on the intended NIC") {
    m.samples.after_probe.interfaces[1].rx_bytes = 12'000;
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.advice.next == NextStep::remeasure);
    CHECK(r.advice.probe_bytes == lab::kProbe64MiB);
    CHECK(delta(r, "link2").issue == CounterIssue::reset);
    CHECK(delta(r, "link2").rx_net == 0);
    CHECK_FALSE(r.intended_share);
  }
  SECTION("on another NIC (its bytes could have been the probe's)") {
    m.samples.before_probe.interfaces[0].rx_bytes = 0;
    m.samples.after_probe.interfaces[0].rx_bytes = 0;
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.advice.next == NextStep::remeasure);
  }
  SECTION("intended NIC re-plugged after the baseline under a new name") {
    for (auto* s : {&m.samples.before_probe, &m.samples.after_probe})
      for (auto& i : s->interfaces)
        if (i.name == "link2") {
          i.name = "eth3";
          i.rx_bytes -= 900'000;
        }
    const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.advice.next == NextStep::remeasure);
    CHECK(delta(r, "eth3").previous_name == "link2");
  }
}

TEST_CASE("renamed intended interface is verified by MAC") {
  auto m = lab::measure({lab::link1(0), lab::link2(68'394'218)}, lab::kProbe64MiB);
  for (auto& i : m.samples.after_probe.interfaces)
    if (i.name == "link2") i.name = "ens20";
  for (auto& i : m.samples.before_probe.interfaces)
    if (i.name == "link2") i.name = "ens20";
  const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::clean_evidence(), m));
  CHECK(r.verdict == Verdict::verified);
  CHECK(r.deltas.front().name == "ens20");
  CHECK(r.deltas.front().previous_name == "link2");
}

TEST_CASE("throughput at another link's line rate is flagged: exactly the old number") {
  // The seed: 105 MB/s on a 1 GbE link while the 10 GbE link was intended.
  Lane l1{"link1", lab::kLink1Mac, 0, 0, 4'200'000'000, 0, 1000};
  Lane l2{"link2", lab::kLink2Mac, 0, 0, 0, 0, 10000};
  const auto m = lab::measure({l1, l2}, 4'194'304'000, ProbeDirection::read, {1.0, 0.2, 4'194'304'000 / 105e6});
  auto in = lab::input(lab::movies_via_link2(), lab::trunked_evidence(), m);
  in.settings.max_probe_bytes = 8ull << 30;
  const auto r = verify_path(in);
  CHECK(r.verdict == Verdict::wrong_path);
  REQUIRE(r.exactly_old_number);
  CHECK(r.exactly_old_number->interface_name == "link1");
  CHECK(r.exactly_old_number->speed_mbps == 1000);
  CHECK(r.exactly_old_number->ratio == Approx(0.84));
  CHECK(mentions(r.notes, "exactly the old number"));

  SECTION("not flagged at the intended link's own speed class") {
    std::vector<CounterDelta> ds(2);
    ds[0].name = "link2";
    ds[0].intended = true;
    ds[0].speed_mbps = 1000;
    ds[1].name = "link1";
    ds[1].speed_mbps = 1000;
    CHECK_FALSE(match_line_rate(115e6, ds, VerifySettings{}));
  }
  SECTION("not flagged far from any line rate") {
    std::vector<CounterDelta> ds(2);
    ds[0].name = "link2";
    ds[0].intended = true;
    ds[0].speed_mbps = 10000;
    ds[1].name = "link1";
    ds[1].speed_mbps = 1000;
    CHECK_FALSE(match_line_rate(50e6, ds, VerifySettings{}));
    CHECK(match_line_rate(120e6, ds, VerifySettings{}));
  }
}

TEST_CASE("preconditions fail before any probe is believed") {
  const auto m = lab::measure({lab::link1(0), lab::link2(68'394'218)}, lab::kProbe64MiB);
  auto d = lab::movies_via_link2();
  auto e = lab::clean_evidence();

  SECTION("the mount is missing") {
    e.mounts.clear();
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "/mnt/b is not mounted");
    CHECK(r.failed_preconditions.front().where == "guest mount /mnt/b");
    // A hint names a command that does what it says: apply needs a plan file, reconcile does not.
    CHECK(r.failed_preconditions.front().hint.find("`pathwarden reconcile`") != std::string::npos);
    CHECK(r.failed_preconditions.front().hint.find("pathwarden apply") == std::string::npos);
    // The probe read a local file under the empty mount point: no throughput is claimed for it.
    CHECK_FALSE(r.throughput.has_value());
  }
  SECTION("the wrong protocol version (vers=3 wanted, still 4.2 from before the fstab change)") {
    d.vers = "3";
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "/mnt/b uses vers=4.2, the policy wants vers=3");
    CHECK(r.failed_preconditions.front().hint.find("remount") != std::string::npos);
  }
  SECTION("vers=4 accepts whatever minor version was negotiated") {
    d.vers = "4";
    CHECK(verify_path(lab::input(d, e, m)).verdict == Verdict::verified);
  }
  SECTION("nconnect did not take effect") {
    d.nconnect = 8;
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.failed_preconditions.front().hint.find("first mount") != std::string::npos);
  }
  SECTION("nconnect not in effect because another mount made the client: that mount is named") {
    d.nconnect = 8;
    // /mnt/tv mounted the same NAS address with the same version first, without nconnect: /mnt/b
    // shares its client (nfs_match_client compares no nconnect), so /proc/mounts shows nconnect 1.
    e.mounts.insert(e.mounts.begin(), lab::mount("198.51.100.2:/volume1/tv", "/mnt/tv", "nfs4", lab::kV42OptsViaB));
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary ==
          "/mnt/b has nconnect=1, the policy wants nconnect=8: it shares the NFS client for "
          "198.51.100.2 vers=4.2 that /mnt/tv made first with nconnect=1");
    CHECK(r.failed_preconditions.front().hint.find("(/mnt/tv too)") != std::string::npos);
    // The report's connection count is the kernel's, beside the one asked.
    REQUIRE(r.transports);
    CHECK(r.transports->asked == 8u);
    CHECK(r.transports->nconnect == 1u);
    CHECK_FALSE(r.transports->kernel);  // no sunrpc facts here: unknown, not guessed
    e.client_transports = 1;
    e.client_addresses = {"198.51.100.2"};
    const auto with_kernel = verify_path(lab::input(d, e, m));
    REQUIRE(with_kernel.transports);
    CHECK(describe(*with_kernel.transports) ==
          "connections in effect: 1 (nconnect=1; 1 transport(s) in mountstats; the kernel's client: 1 to "
          "198.51.100.2), 8 asked");
    // Another version is another client: not named.
    e.mounts.front() = lab::mount("198.51.100.2:/volume1/tv", "/mnt/tv", "nfs", lab::kV3OptsViaB);
    CHECK(verify_path(lab::input(d, e, m)).summary == "/mnt/b has nconnect=1, the policy wants nconnect=8");
  }
  SECTION("fewer channels in the guest than the policy's queues") {
    d.queues = 8;
    e.guest_channels = 1;
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "link2 uses 1 combined channel(s), the policy wants 8");
    CHECK(r.failed_preconditions.front().hint.find("ethtool -L link2 combined 8") != std::string::npos);
  }
  SECTION("a channel count the guest could not read: the hint says how to tell why, not that ethtool is missing") {
    d.queues = 8;
    e.guest_channels.reset();
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary == "the combined channel count of link2 is unknown");
    CHECK(r.failed_preconditions.front().hint.find("`ethtool -l link2`") != std::string::npos);
    CHECK(r.failed_preconditions.front().hint.find("multi-queue virtio") != std::string::npos);
  }
  SECTION("enough channels pass") {
    d.queues = 2;
    CHECK(verify_path(lab::input(d, e, m)).verdict == Verdict::verified);
  }
  SECTION("no interface carries the NIC's MAC") {
    d.intended_mac = "52:54:00:99:99:99";
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary.find("52:54:00:99:99:99") != std::string::npos);
  }
  SECTION("mounted from an address that is not the NAS's") {
    e.mounts = {lab::mount("203.0.113.50:/export", "/mnt/b", "nfs4", "vers=4.2,addr=203.0.113.50")};
    const auto r = verify_path(lab::input(d, e, m));
    CHECK(r.verdict == Verdict::precondition_failed);
    CHECK(r.summary.find("203.0.113.50") != std::string::npos);
  }
  SECTION("the trunked address is not a failed precondition: it is what the probe must show") {
    CHECK(check_preconditions(d, lab::trunked_evidence(), m.samples.after_probe).empty());
  }
}

TEST_CASE("an audit without a probe can find a wrong path, never verify one") {
  VerificationInput in;
  in.desired = lab::movies_via_link2();
  in.interfaces = lab::measure({lab::link1(0), lab::link2(0)}, 0).samples.after_probe;
  SECTION("trunked evidence") {
    in.evidence = lab::trunked_evidence();
    const auto r = verify_path(in);
    CHECK(r.verdict == Verdict::wrong_path);
    REQUIRE(r.diagnosis);
    CHECK(r.diagnosis->kind == DiagnosisKind::trunked);
  }
  SECTION("connection from another link's address") {
    in.evidence = lab::clean_evidence();
    in.evidence.connections = {{"192.0.2.10", 901, "198.51.100.2", 2049}};
    const auto r = verify_path(in);
    CHECK(r.verdict == Verdict::wrong_path);
    CHECK(r.diagnosis->kind == DiagnosisKind::misrouted);
  }
  SECTION("everything looks right") {
    in.evidence = lab::clean_evidence();
    const auto r = verify_path(in);
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK_FALSE(r.diagnosis);
  }
}

TEST_CASE("inconclusive results still carry the evidence's diagnosis") {
  const auto m = lab::measure({lab::link1(0), lab::link2(0)}, lab::kProbe64MiB);
  const auto r = verify_path(lab::input(lab::movies_via_link2(), lab::trunked_evidence(), m));
  CHECK(r.verdict == Verdict::inconclusive);
  REQUIRE(r.diagnosis);
  CHECK(r.diagnosis->kind == DiagnosisKind::trunked);
}
