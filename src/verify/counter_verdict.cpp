// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/counter_verdict.hpp"

#include <algorithm>
#include <cmath>

#include "verify/text.hpp"

namespace pw::verify {
namespace {

// Interfaces other than the intended one whose bytes say something: not stacked (their bytes
// are counted below them too) and not sharing the intended NIC's MAC (a VLAN on it).
std::vector<const CounterDelta*> other_interfaces(const CounterAnalysis& a) {
  const auto* intended = a.intended();
  std::vector<const CounterDelta*> out;
  for (const auto& d : a.deltas) {
    if (d.intended || d.upper_device || !measurable(d)) continue;
    if (intended && d.mac == intended->mac) continue;
    out.push_back(&d);
  }
  return out;
}

std::uint64_t round_up_mib(double bytes) {
  return static_cast<std::uint64_t>(std::ceil(bytes / static_cast<double>(text::kMiB))) * text::kMiB;
}

// The share of the probe window a bigger probe stretches: the probe's own run time. The rest
// (reading the counters, starting the probe) stays as long whatever the probe size.
double probe_part_of_window(const CounterAnalysis& a, const ProbeRun& probe) {
  if (probe.wall_time.count() <= 0 || a.probe_window.count() <= 0) return 1.0;
  return std::clamp(static_cast<double>(probe.wall_time.count()) / static_cast<double>(a.probe_window.count()), 0.0,
                    1.0);
}

// The uncertainty of a set of interfaces, in shares of the current probe. Fixed: the noise floor
// and the background accumulated while no probe ran (both shrink against a bigger probe).
// Scaling: the background accumulated during the probe itself (grows with the probe's duration,
// so its share stays whatever the probe size).
struct Noise {
  double floor = 0;
  double background = 0;
  std::string noisiest;
  double noisiest_background = -1;

  void add(const CounterDelta& d, const NoiseModel& model, double p, double probe_part) {
    const double f = static_cast<double>(std::min(d.uncertainty, model.floor_bytes));
    const double bg = static_cast<double>(d.uncertainty) - f;
    floor += (f + bg * (1.0 - probe_part)) / p;
    background += bg * probe_part / p;
    if (bg > noisiest_background) {
      noisiest_background = bg;
      noisiest = d.name;
    }
  }
};

// Grow the probe until the estimate's distance from the threshold (margin, in shares) clears
// the noise; when background alone covers the margin, a bigger probe cannot decide either.
ProbeAdvice advise_growth(const Noise& noise, double margin, const ProbeRun& probe, const VerifySettings& s) {
  ProbeAdvice advice;
  advice.next = NextStep::give_up;
  if (noise.background >= margin) {
    advice.reason = "background traffic on " + noise.noisiest +
                    " is too strong against the probe's rate for any probe size; verify when the guest is quieter";
    return advice;
  }
  if (probe.bytes >= s.max_probe_bytes) {
    advice.reason =
        "the probe is already at its maximum of " + text::binary_bytes(static_cast<double>(s.max_probe_bytes));
    return advice;
  }
  const double p = static_cast<double>(probe.bytes);
  const double needed = 1.25 * noise.floor * p / (margin - noise.background);
  advice.next = NextStep::grow_probe;
  advice.probe_bytes = std::min(round_up_mib(std::max(2 * p, needed)), s.max_probe_bytes);
  advice.reason = "the signal is too small against the noise: probe again with " +
                  text::binary_bytes(static_cast<double>(advice.probe_bytes));
  return advice;
}

std::string share_line(const CounterDelta& d, const ProbeRun& probe) {
  return d.name + " " + text::percent(static_cast<double>(d.net(probe.direction)) / static_cast<double>(probe.bytes));
}

// Where the bytes went, for the one-line summary: the intended NIC and any other with ≥ 5 %.
std::string where_bytes_went(const CounterAnalysis& a, const ProbeRun& probe) {
  std::string out;
  auto add = [&](std::string s) { out += (out.empty() ? "" : ", ") + std::move(s); };
  if (const auto* i = a.intended()) add(share_line(*i, probe) + " (intended)");
  for (const auto* d : other_interfaces(a))
    if (static_cast<double>(d->net(probe.direction)) >= 0.05 * static_cast<double>(probe.bytes))
      add(share_line(*d, probe));
  return out;
}

}  // namespace

bool measurable(const CounterDelta& d) {
  return d.issue == CounterIssue::none || d.issue == CounterIssue::no_baseline;
}

// The byte counters' verdict. Long because it is one decision list, in the order the contract
// (DESIGN.md) states it: each rule a few lines with the evidence it gives.
CounterVerdict decide_counters(const CounterAnalysis& a, const ProbeRun& probe, const VerifySettings& s) {
  CounterVerdict out;
  const std::string what = probe.direction == ProbeDirection::read ? "read" : "write";
  if (probe.bytes == 0) {
    out.summary = "the probe moved no bytes";
    out.advice = {NextStep::give_up, 0, "check the probe file and the probe size"};
    return out;
  }
  const CounterDelta* intended = a.intended();
  if (!intended) {
    out.summary = "the intended interface was not found in the counter snapshots";
    out.advice = {NextStep::remeasure, probe.bytes, "the NIC was missing when the counters were read"};
    return out;
  }
  if (!measurable(*intended) || intended->issue == CounterIssue::no_baseline) {
    out.summary = intended->name + ": " + std::string(to_string(intended->issue)) + ", its bytes cannot be counted";
    out.advice = {NextStep::remeasure, probe.bytes,
                  "take a new baseline (the NIC was re-plugged or reset) and probe again"};
    return out;
  }
  for (const auto& d : a.deltas) {
    if (d.issue == CounterIssue::reset && !d.upper_device) {
      out.summary = d.name + ": counters reset during the measurement";
      out.advice = {NextStep::remeasure, probe.bytes, "take a new baseline and probe again"};
      return out;
    }
  }

  const double p = static_cast<double>(probe.bytes);
  const auto dir = probe.direction;
  const double net = static_cast<double>(intended->net(dir));
  const double u = static_cast<double>(intended->uncertainty);
  const double low = (net - u) / p, high = (net + u) / p;
  out.consistent =
      static_cast<double>(intended->raw(dir)) >= s.min_share * p - static_cast<double>(s.noise.floor_bytes);
  double elsewhere_low = 1.0 - s.min_share;
  for (const auto* d : other_interfaces(a)) {
    const double lo = (static_cast<double>(d->net(dir)) - static_cast<double>(d->uncertainty)) / p;
    if (lo > elsewhere_low) {
      elsewhere_low = lo;
      out.elsewhere = d->name;
    }
  }
  // A link that moved far less during the probe than its baseline predicts: its background
  // changed, so subtracting it would invent a deficit (or hide bytes). Measure again instead.
  for (const auto& d : a.deltas) {
    if (d.upper_device || !measurable(d)) continue;
    if (d.net(dir) < -static_cast<std::int64_t>(d.uncertainty)) {
      out.summary = d.name + " moved " + text::bytes(static_cast<double>(d.raw(dir))) +
                    " during the probe, far less than the " +
                    text::bytes(static_cast<double>(dir == ProbeDirection::read ? d.rx_background : d.tx_background)) +
                    " its baseline predicts: the background changed, the counters cannot be netted";
      out.advice = {NextStep::remeasure, probe.bytes,
                    "the background on " + d.name + " changed during the probe; probe again"};
      return out;
    }
  }

  // What all interfaces together carried beyond their background, at worst and at best.
  const auto others = other_interfaces(a);
  double elsewhere_max = 0, seen_low = std::max(0.0, net - u) / p, seen_high = std::max(0.0, net + u) / p;
  const CounterDelta* strongest = nullptr;
  for (const auto* d : others) {
    const double dnet = static_cast<double>(d->net(dir)), du = static_cast<double>(d->uncertainty);
    const double lo = std::max(0.0, dnet - du) / p;
    seen_low += lo;
    seen_high += std::max(0.0, dnet + du) / p;
    if (lo > elsewhere_max) {
      elsewhere_max = lo;
      strongest = d;
    }
  }

  if (low >= s.min_share) {
    if (strongest && elsewhere_max > 1.0 - s.min_share) {
      // The intended NIC got enough bytes, but so did another: one of them is unrelated traffic.
      out.summary = "both " + intended->name + " and " + strongest->name + " moved the probe's worth of bytes";
      out.advice = {NextStep::remeasure, probe.bytes, "unrelated traffic disturbed the measurement; probe again"};
      return out;
    }
    out.verdict = Verdict::verified;
    out.summary =
        text::percent(net / p) + " of the probe's " + text::binary_bytes(p) + " " + what + " took " + intended->name;
    return out;
  }
  const double probe_part = probe_part_of_window(a, probe);
  Noise intended_noise;
  intended_noise.add(*intended, s.noise, p, probe_part);
  if (high < s.min_share) {
    if (seen_low >= s.min_seen_share) {
      out.verdict = Verdict::wrong_path;
      out.summary = "the probe's " + text::binary_bytes(p) + " " + what + " did not take " + intended->name + ": " +
                    where_bytes_went(a, probe);
      return out;
    }
    if (seen_high < s.min_seen_share) {
      out.summary = "the probe's " + text::binary_bytes(p) + " showed on no interface";
      out.advice = {NextStep::give_up, 0,
                    "a cached read or a probe file shorter than the probe size moves nothing: read with O_DIRECT from "
                    "a large enough file"};
      return out;
    }
    // Clearly not on the intended NIC, but where it went is lost in the others' noise.
    Noise all = intended_noise;
    for (const auto* d : others) all.add(*d, s.noise, p, probe_part);
    out.advice = advise_growth(all, std::abs((seen_low + seen_high) / 2 - s.min_seen_share), probe, s);
  } else {
    out.advice = advise_growth(intended_noise, std::abs(net / p - s.min_share), probe, s);
  }
  out.summary = "the probe's bytes cannot be told from the background: " + intended->name + " " +
                text::percent(std::max(0.0, low)) + "–" + text::percent(high) + " of the probe";
  return out;
}

}  // namespace pw::verify
