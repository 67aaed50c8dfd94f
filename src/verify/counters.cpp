// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/counters.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>

#include "net/mac_address.hpp"

namespace pw::verify {
namespace {

constexpr std::size_t kSnapshots = 4;  // baseline_start, baseline_end, before_probe, after_probe
constexpr std::size_t kBaseStart = 0, kBaseEnd = 1, kBefore = 2, kAfter = 3;

bool meaningless_mac(const net::MacAddress& mac) {
  return mac.empty() || mac == net::MacAddress("00:00:00:00:00:00");
}

// One interface followed through the snapshots; empty slots where it was absent.
struct Track {
  std::array<const InterfaceCounters*, kSnapshots> at{};
  net::MacAddress mac;

  const InterfaceCounters* latest_before(std::size_t k) const {
    for (std::size_t i = k; i-- > 0;)
      if (at[i]) return at[i];
    return nullptr;
  }
  const InterfaceCounters* last() const { return latest_before(kSnapshots); }
};

std::vector<Track> follow_interfaces(const std::array<const CounterSnapshot*, kSnapshots>& snaps) {
  std::vector<Track> tracks;
  for (std::size_t k = 0; k < kSnapshots; ++k) {
    const auto& ifaces = snaps[k]->interfaces;
    std::vector<bool> matched(ifaces.size(), false);
    // A track snapshot k may still claim: its interface as last seen, else nullptr.
    auto claimable_from = [&](const Track& t) { return t.at[k] == nullptr ? t.latest_before(k) : nullptr; };
    auto claimable = [&](const Track& t) { return claimable_from(t) != nullptr; };
    // Same MAC and same name first, so several interfaces sharing a MAC keep their identities.
    for (std::size_t i = 0; i < ifaces.size(); ++i) {
      const auto& mac = ifaces[i].mac;
      for (auto& t : tracks) {
        const auto* seen = claimable_from(t);
        if (seen != nullptr && t.mac == mac && seen->name == ifaces[i].name) {
          t.at[k] = &ifaces[i];
          matched[i] = true;
          break;
        }
      }
    }
    // Then a renamed interface: the only unclaimed track with its MAC.
    for (std::size_t i = 0; i < ifaces.size(); ++i) {
      if (matched[i]) continue;
      const auto& mac = ifaces[i].mac;
      if (meaningless_mac(mac)) continue;
      Track* only = nullptr;
      int count = 0;
      for (auto& t : tracks)
        if (claimable(t) && t.mac == mac) {
          only = &t;
          ++count;
        }
      if (count == 1) {
        only->at[k] = &ifaces[i];
        matched[i] = true;
      }
    }
    for (std::size_t i = 0; i < ifaces.size(); ++i) {
      if (matched[i]) continue;
      Track t;
      t.mac = ifaces[i].mac;
      t.at[k] = &ifaces[i];
      tracks.push_back(t);
    }
  }
  return tracks;
}

// Byte figures stay within int64 so that net = raw - background can always be represented.
std::uint64_t round_bytes(double v) {
  if (!(v > 0)) return 0;
  if (v >= static_cast<double>(std::numeric_limits<std::int64_t>::max()))
    return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::uint64_t>(std::llround(v));
}

std::uint64_t scale(double bytes_per_ns, std::chrono::nanoseconds window) {
  return round_bytes(bytes_per_ns * static_cast<double>(window.count()));
}

std::int64_t signed_difference(std::uint64_t a, std::uint64_t b) {
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (a >= b) return static_cast<std::int64_t>(std::min(a - b, max));
  return -static_cast<std::int64_t>(std::min(b - a, max));
}

}  // namespace

std::string_view to_string(CounterIssue issue) {
  switch (issue) {
    case CounterIssue::none:
      return "none";
    case CounterIssue::reset:
      return "counter reset";
    case CounterIssue::no_baseline:
      return "no baseline";
    case CounterIssue::not_in_probe:
      return "absent during the probe";
  }
  return "?";
}

IntendedInterface find_intended(const CounterSnapshot& snapshot, const net::MacAddress& intended_mac) {
  std::vector<const InterfaceCounters*> devices, uppers;
  for (const auto& i : snapshot.interfaces) {
    if (i.mac != intended_mac) continue;
    (i.upper_device ? uppers : devices).push_back(&i);
  }
  const auto& pool = devices.empty() ? uppers : devices;
  IntendedInterface out;
  for (const auto* i : pool) out.candidates.push_back(i->name);
  if (pool.size() == 1) out.found = *pool.front();
  return out;
}

const CounterDelta* CounterAnalysis::intended() const {
  for (const auto& d : deltas)
    if (d.intended) return &d;
  return nullptr;
}

CounterAnalysis analyze_counters(const CounterSamples& samples, const ProbeRun& probe,
                                 const net::MacAddress& intended_mac, const NoiseModel& noise) {
  const std::array<const CounterSnapshot*, kSnapshots> snaps{&samples.baseline_start, &samples.baseline_end,
                                                             &samples.before_probe, &samples.after_probe};
  CounterAnalysis out;
  out.baseline_window = samples.baseline_end.taken_at - samples.baseline_start.taken_at;
  out.probe_window = samples.after_probe.taken_at > samples.before_probe.taken_at
                         ? samples.after_probe.taken_at - samples.before_probe.taken_at
                         : probe.wall_time;
  const bool baseline_usable = out.baseline_window.count() > 0;
  if (!baseline_usable)
    out.notes.emplace_back("the baseline snapshots are not a positive time apart: background assumed 0");

  const auto intended = find_intended(samples.after_probe, intended_mac);
  std::vector<Track> tracks = follow_interfaces(snaps);

  for (const auto& t : tracks) {
    const InterfaceCounters* last = t.last();
    CounterDelta d;
    d.name = last->name;
    d.mac = t.mac;
    d.upper_device = last->upper_device;
    d.speed_mbps = last->speed_mbps;
    d.intended =
        intended.found && t.at[kAfter] && t.at[kAfter]->name == intended.found->name && t.mac == intended.found->mac;
    for (const auto* seen : t.at) {
      if (seen && seen->name != d.name) {
        d.previous_name = seen->name;
        break;
      }
    }
    if (!d.previous_name.empty())
      out.notes.push_back(d.name + " (MAC " + d.mac + ") was called " + d.previous_name + " in an earlier snapshot");

    const auto* before = t.at[kBefore];
    const auto* after = t.at[kAfter];
    if (!before || !after) {
      d.issue = CounterIssue::not_in_probe;
      out.notes.push_back(d.name + " (MAC " + d.mac + ") was not present both before and after the probe");
      out.deltas.push_back(std::move(d));
      continue;
    }
    // A decrease anywhere after the baseline started means the netdev was re-created or reset;
    // deltas across it would be garbage.
    const InterfaceCounters* prev = nullptr;
    for (const auto* seen : t.at) {
      if (!seen) continue;
      if (prev && (seen->rx_bytes < prev->rx_bytes || seen->tx_bytes < prev->tx_bytes ||
                   (seen->ifindex && prev->ifindex && *seen->ifindex != *prev->ifindex)))
        d.issue = CounterIssue::reset;
      prev = seen;
    }
    if (d.issue == CounterIssue::reset) {
      out.notes.push_back(d.name + " (MAC " + d.mac +
                          "): counters restarted between snapshots (NIC re-plugged or reset)");
      out.deltas.push_back(std::move(d));
      continue;
    }
    d.rx_bytes = after->rx_bytes - before->rx_bytes;
    d.tx_bytes = after->tx_bytes - before->tx_bytes;

    const auto* b0 = t.at[kBaseStart];
    const auto* b1 = t.at[kBaseEnd];
    if (b0 && b1 && baseline_usable) {
      const double ns = static_cast<double>(out.baseline_window.count());
      d.rx_background = scale(static_cast<double>(b1->rx_bytes - b0->rx_bytes) / ns, out.probe_window);
      d.tx_background = scale(static_cast<double>(b1->tx_bytes - b0->tx_bytes) / ns, out.probe_window);
    } else if (!b0 || !b1) {
      d.issue = CounterIssue::no_baseline;
      out.notes.push_back(d.name + " (MAC " + d.mac + ") was absent from the baseline: its background is assumed 0");
    }
    d.rx_net = signed_difference(d.rx_bytes, d.rx_background);
    d.tx_net = signed_difference(d.tx_bytes, d.tx_background);
    const std::uint64_t background = probe.direction == ProbeDirection::read ? d.rx_background : d.tx_background;
    d.uncertainty = noise.floor_bytes + round_bytes(noise.background_uncertainty * static_cast<double>(background));
    out.deltas.push_back(std::move(d));
  }
  std::stable_partition(out.deltas.begin(), out.deltas.end(), [](const CounterDelta& d) { return d.intended; });
  return out;
}

}  // namespace pw::verify
