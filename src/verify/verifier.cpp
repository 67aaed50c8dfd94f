#include "verify/verifier.hpp"

#include <algorithm>
#include <cmath>

#include "verify/text.hpp"

namespace pw::verify {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

bool measurable(const CounterDelta& d) {
  return d.issue == CounterIssue::none || d.issue == CounterIssue::no_baseline;
}

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
  return static_cast<std::uint64_t>(std::ceil(bytes / static_cast<double>(kMiB))) * kMiB;
}

// The share of the probe window a bigger probe stretches: the probe's own run time. The rest
// (reading the counters, starting the probe) stays as long whatever the probe size.
double probe_part_of_window(const CounterAnalysis& a, const ProbeRun& probe) {
  if (probe.wall_time.count() <= 0 || a.probe_window.count() <= 0) return 1.0;
  return std::clamp(static_cast<double>(probe.wall_time.count()) / static_cast<double>(a.probe_window.count()), 0.0, 1.0);
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
    if (bg > noisiest_background) { noisiest_background = bg; noisiest = d.name; }
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
    advice.reason = "the probe is already at its maximum of " + text::binary_bytes(static_cast<double>(s.max_probe_bytes));
    return advice;
  }
  const double p = static_cast<double>(probe.bytes);
  const double needed = 1.25 * noise.floor * p / (margin - noise.background);
  advice.next = NextStep::grow_probe;
  advice.probe_bytes = std::min(round_up_mib(std::max(2 * p, needed)), s.max_probe_bytes);
  advice.reason = "the signal is too small against the noise: probe again with " + text::binary_bytes(static_cast<double>(advice.probe_bytes));
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
    if (static_cast<double>(d->net(probe.direction)) >= 0.05 * static_cast<double>(probe.bytes)) add(share_line(*d, probe));
  return out;
}

struct CounterVerdict {
  Verdict verdict = Verdict::inconclusive;
  std::string summary;
  ProbeAdvice advice;
};

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
    out.advice = {NextStep::remeasure, probe.bytes, "take a new baseline (the NIC was re-plugged or reset) and probe again"};
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

  // What all interfaces together carried beyond their background, at worst and at best.
  const auto others = other_interfaces(a);
  double elsewhere_max = 0, seen_low = std::max(0.0, net - u) / p, seen_high = std::max(0.0, net + u) / p;
  const CounterDelta* strongest = nullptr;
  for (const auto* d : others) {
    const double dnet = static_cast<double>(d->net(dir)), du = static_cast<double>(d->uncertainty);
    const double lo = std::max(0.0, dnet - du) / p;
    seen_low += lo;
    seen_high += std::max(0.0, dnet + du) / p;
    if (lo > elsewhere_max) { elsewhere_max = lo; strongest = d; }
  }

  if (low >= s.min_share) {
    if (strongest && elsewhere_max > 1.0 - s.min_share) {
      // The intended NIC got enough bytes, but so did another: one of them is unrelated traffic.
      out.summary = "both " + intended->name + " and " + strongest->name + " moved the probe's worth of bytes";
      out.advice = {NextStep::remeasure, probe.bytes, "unrelated traffic disturbed the measurement; probe again"};
      return out;
    }
    out.verdict = Verdict::verified;
    out.summary = text::percent(net / p) + " of the probe's " + text::binary_bytes(p) + " " + what + " took " + intended->name;
    return out;
  }
  const double probe_part = probe_part_of_window(a, probe);
  Noise intended_noise;
  intended_noise.add(*intended, s.noise, p, probe_part);
  if (high < s.min_share) {
    if (seen_low >= s.min_seen_share) {
      out.verdict = Verdict::wrong_path;
      out.summary = "the probe's " + text::binary_bytes(p) + " " + what + " did not take " + intended->name + ": " + where_bytes_went(a, probe);
      return out;
    }
    if (seen_high < s.min_seen_share) {
      out.summary = "the probe's " + text::binary_bytes(p) + " showed on no interface";
      out.advice = {NextStep::give_up, 0,
                    "a cached read or a probe file shorter than the probe size moves nothing: read with O_DIRECT from a large enough file"};
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

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::verified: return "verified";
    case Verdict::wrong_path: return "wrong-path";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::precondition_failed: return "precondition-failed";
  }
  return "?";
}

std::string_view to_string(NextStep step) {
  switch (step) {
    case NextStep::none: return "none";
    case NextStep::grow_probe: return "grow-probe";
    case NextStep::remeasure: return "remeasure";
    case NextStep::give_up: return "give-up";
  }
  return "?";
}

std::optional<LineRateMatch> match_line_rate(double throughput, const std::vector<CounterDelta>& deltas,
                                             const VerifySettings& s) {
  std::optional<std::uint64_t> intended_speed;
  for (const auto& d : deltas)
    if (d.intended) intended_speed = d.speed_mbps;
  std::optional<LineRateMatch> best;
  for (const auto& d : deltas) {
    if (d.intended || d.upper_device || !d.speed_mbps || *d.speed_mbps == 0) continue;
    if (intended_speed && *intended_speed <= *d.speed_mbps) continue;  // no slower "old" link
    const double line = static_cast<double>(*d.speed_mbps) * 1e6 / 8;
    const double ratio = throughput / line;
    if (ratio < s.line_rate_low || ratio > s.line_rate_high) continue;
    if (!best || std::abs(1 - ratio) < std::abs(1 - best->ratio)) best = LineRateMatch{d.name, *d.speed_mbps, ratio};
  }
  return best;
}

VerificationResult verify_path(const VerificationInput& in) {
  VerificationResult out;
  const auto& s = in.settings;
  const CounterSnapshot& now = in.measurement ? in.measurement->samples.after_probe : in.interfaces;
  out.failed_preconditions = check_preconditions(in.desired, in.evidence, now);

  std::optional<CounterAnalysis> analysis;
  if (in.measurement) {
    const auto& m = *in.measurement;
    analysis = analyze_counters(m.samples, m.probe, in.desired.intended_mac, s.noise);
    out.deltas = analysis->deltas;
    out.notes = analysis->notes;
    if (const auto* i = analysis->intended(); i && m.probe.bytes > 0 && measurable(*i))
      out.intended_share = static_cast<double>(i->net(m.probe.direction)) / static_cast<double>(m.probe.bytes);
    if (m.probe.wall_time.count() > 0) {
      out.throughput = static_cast<double>(m.probe.bytes) * 1e9 / static_cast<double>(m.probe.wall_time.count());
      out.exactly_old_number = match_line_rate(*out.throughput, out.deltas, s);
      if (out.exactly_old_number)
        out.notes.push_back("throughput " + text::rate(*out.throughput) + " is " + text::percent(out.exactly_old_number->ratio) +
                            " of " + out.exactly_old_number->interface_name + "'s line rate (" +
                            std::to_string(out.exactly_old_number->speed_mbps) + " Mb/s): exactly the old number");
    }
  }

  if (!out.failed_preconditions.empty()) {
    out.verdict = Verdict::precondition_failed;
    out.summary = out.failed_preconditions.front().what;
    return out;
  }

  const bool evidence_wrong = evidence_shows_wrong_path(in.desired, in.evidence, now);
  if (!in.measurement) {
    if (evidence_wrong) {
      out.verdict = Verdict::wrong_path;
      out.diagnosis = diagnose(in.desired, in.evidence, nullptr, nullptr);
      out.summary = std::string("the mount's connection does not use the intended link (") +
                    std::string(to_string(out.diagnosis->kind)) + ")";
    } else {
      out.verdict = Verdict::inconclusive;
      out.summary = "options, channels and connections look right; only a probe proves the path";
    }
    return out;
  }

  const auto& m = *in.measurement;
  CounterVerdict cv = decide_counters(*analysis, m.probe, s);
  out.verdict = cv.verdict;
  out.summary = cv.summary;
  out.advice = cv.advice;
  if (cv.verdict == Verdict::wrong_path || (cv.verdict == Verdict::inconclusive && evidence_wrong))
    out.diagnosis = diagnose(in.desired, in.evidence, &*analysis, &m.probe);
  if (cv.verdict == Verdict::verified && evidence_wrong)
    out.notes.push_back("the counters prove the path although the mount's connection evidence points elsewhere");
  return out;
}

}  // namespace pw::verify
