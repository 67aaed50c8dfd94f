// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/counters.hpp"

#include <catch2/catch.hpp>

#include "lab_fixture.hpp"
#include "net/mac_address.hpp"

using namespace pw::verify;
using lab::Lane;

namespace {

const CounterDelta& by_mac(const CounterAnalysis& a, const std::string& mac) {
  return lab::find_delta(a.deltas, mac);
}

}  // namespace

TEST_CASE("MACs compare in any case and separator") {
  CHECK(pw::net::MacAddress("52-54-00-AB-cd-01").str() == "52:54:00:ab:cd:01");
  CHECK(pw::net::MacAddress("52-54-00-AB-cd-01") == pw::net::MacAddress("52:54:00:ab:cd:01"));
  CHECK(pw::net::MacAddress("52:54:00:ab:cd:01").valid());
  CHECK_FALSE(pw::net::MacAddress("not-a-mac").valid());
  CHECK(pw::net::MacAddress("NOT-A-MAC").str() == "not:a:mac");  // kept as written, never equal to a MAC
  CHECK_FALSE(pw::net::MacAddress::parse("52:54:00:ab:cd"));
}

TEST_CASE("background learnt in the baseline window is subtracted from the probe's delta") {
  // 2 MB/s steady on link2 in a 1 s baseline; the probe window is 1.35 s.
  Lane l2{"link2", lab::kLink2Mac, 2'000'000, 10'000, 2'700'000 + 67'000'000, 13'500, std::nullopt};
  const auto m = lab::measure({lab::link1(0), l2, lab::mgmt()}, lab::kProbe64MiB);
  const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  REQUIRE(a.intended() != nullptr);
  const auto& d = *a.intended();
  CHECK(d.name == "link2");
  CHECK(d.rx_bytes == 69'700'000);
  CHECK(d.rx_background == 2'700'000);
  CHECK(d.rx_net == 67'000'000);
  CHECK(d.tx_background == 13'500);
  CHECK(d.tx_net == 0);
  // Uncertainty: the 64 KiB floor plus half the expected background.
  CHECK(d.uncertainty == 65'536 + 1'350'000);
  CHECK(a.probe_window == std::chrono::nanoseconds(1'350'000'000));
  CHECK(a.deltas.front().intended);
}

TEST_CASE("an interface renamed between snapshots is still matched by its MAC") {
  auto m = lab::measure({lab::link1(0), lab::link2(67'644'500), lab::mgmt()}, lab::kProbe64MiB);
  // udev renamed eth1 → link2 after the baseline; link1 kept its name.
  for (auto* s : {&m.samples.baseline_start, &m.samples.baseline_end})
    for (auto& i : s->interfaces)
      if (i.name == "link2") i.name = "eth1";
  const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  const auto& d = by_mac(a, lab::kLink2Mac);
  CHECK(d.intended);
  CHECK(d.name == "link2");
  CHECK(d.previous_name == "eth1");
  CHECK(d.issue == CounterIssue::none);
  CHECK(d.rx_net == 67'644'500);
  CHECK(a.notes.size() == 1);
}

TEST_CASE("two interfaces that swapped names keep their own counters") {
  auto m = lab::measure({lab::link1(67'832'136), lab::link2(0)}, lab::kProbe64MiB);
  for (auto* s : {&m.samples.before_probe, &m.samples.after_probe})
    for (auto& i : s->interfaces) i.name = (i.name == "link1") ? "link2" : "link1";
  const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  const auto& moved = by_mac(a, lab::kLink1Mac);  // now named link2, carried the bytes
  CHECK(moved.name == "link2");
  CHECK(moved.previous_name == "link1");
  CHECK(moved.rx_net == 67'832'136);
  CHECK_FALSE(moved.intended);
  const auto& intended = by_mac(a, lab::kLink2Mac);
  CHECK(intended.intended);
  CHECK(intended.name == "link1");
  CHECK(intended.rx_net == 0);
}

TEST_CASE("a counter that goes down is a reset, never a huge delta") {
  SECTION("during the probe (NIC re-plugged)") {
    auto m = lab::measure({lab::link1(0), lab::link2(5'000'000)}, lab::kProbe64MiB);
    m.samples.after_probe.interfaces[1].rx_bytes = 4'000;  // new netdev, counting from 0
    const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
    const auto& d = by_mac(a, lab::kLink2Mac);
    CHECK(d.issue == CounterIssue::reset);
    CHECK(d.rx_bytes == 0);
    CHECK(d.rx_net == 0);
  }
  SECTION("during the baseline") {
    auto m = lab::measure({lab::link1(0), lab::link2(67'000'000)}, lab::kProbe64MiB);
    m.samples.baseline_end.interfaces[0].tx_bytes = 10;
    const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
    CHECK(by_mac(a, lab::kLink1Mac).issue == CounterIssue::reset);
    CHECK(by_mac(a, lab::kLink2Mac).issue == CounterIssue::none);
  }
}

TEST_CASE("a new ifindex is a reset even when the counters climbed past the old values") {
  auto m = lab::measure({lab::link1(0), lab::link2(67'000'000)}, lab::kProbe64MiB);
  for (auto* s : {&m.samples.baseline_start, &m.samples.baseline_end, &m.samples.before_probe})
    s->interfaces[1].ifindex = 3;
  m.samples.after_probe.interfaces[1].ifindex = 7;  // re-plugged during the probe
  auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  CHECK(by_mac(a, lab::kLink2Mac).issue == CounterIssue::reset);
  m.samples.after_probe.interfaces[1].ifindex = 3;
  a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  CHECK(by_mac(a, lab::kLink2Mac).issue == CounterIssue::none);
}

TEST_CASE("interfaces missing from some snapshots are marked, not guessed") {
  auto m = lab::measure({lab::link1(0), lab::link2(67'000'000)}, lab::kProbe64MiB);
  // A container veth appears after the baseline; another vanishes before the probe ends.
  auto veth = lab::iface("veth0", "aa:bb:cc:00:00:01", 100, 100);
  m.samples.before_probe.interfaces.push_back(veth);
  veth.rx_bytes = 600;
  m.samples.after_probe.interfaces.push_back(veth);
  const auto gone = lab::iface("veth9", "aa:bb:cc:00:00:09", 5, 5);
  m.samples.baseline_start.interfaces.push_back(gone);
  m.samples.baseline_end.interfaces.push_back(gone);
  m.samples.before_probe.interfaces.push_back(gone);
  const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  CHECK(by_mac(a, "aa:bb:cc:00:00:01").issue == CounterIssue::no_baseline);
  CHECK(by_mac(a, "aa:bb:cc:00:00:01").rx_net == 500);
  CHECK(by_mac(a, "aa:bb:cc:00:00:09").issue == CounterIssue::not_in_probe);
}

TEST_CASE("the intended NIC is the device, not a VLAN stacked on it with the same MAC") {
  auto m = lab::measure({lab::link1(0), lab::link2(67'000'000)}, lab::kProbe64MiB);
  for (auto* s : {&m.samples.baseline_start, &m.samples.baseline_end, &m.samples.before_probe, &m.samples.after_probe})
    s->interfaces.insert(s->interfaces.begin(), lab::iface("link2.100", lab::kLink2Mac, 0, 0, true));
  const auto found = find_intended(m.samples.after_probe, lab::kLink2Mac);
  REQUIRE(found.found);
  CHECK(found.found->name == "link2");
  const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  REQUIRE(a.intended());
  CHECK(a.intended()->name == "link2");
  CHECK(a.intended()->rx_net == 67'000'000);

  SECTION("two devices with one MAC are ambiguous") {
    m.samples.after_probe.interfaces.push_back(lab::iface("link2b", lab::kLink2Mac, 0, 0));
    const auto amb = find_intended(m.samples.after_probe, "52-54-00-12-34-02");
    CHECK_FALSE(amb.found);
    CHECK(amb.candidates.size() == 2);
  }
}

TEST_CASE("without snapshot times the probe's wall time is the window") {
  auto m = lab::measure({lab::link2(67'000'000)}, lab::kProbe64MiB);
  m.samples.before_probe.taken_at = m.samples.after_probe.taken_at = std::chrono::nanoseconds(0);
  const auto a = analyze_counters(m.samples, m.probe, lab::kLink2Mac, NoiseModel{});
  CHECK(a.probe_window == m.probe.wall_time);
}
