// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/path_mtu.hpp"

#include "guest/facts.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {

namespace {

Error bad_line(std::string_view line, std::string_view where, int line_no) {
  return Error{"path-MTU line '" + std::string(line) + "' is not one facts.sh writes",
               std::string(where) + ":" + std::to_string(line_no) + ":1",
               "the guest's facts report looks truncated or comes from another pathwarden; gather facts again"};
}

}  // namespace

Result<PathMtuProbe> parse_path_mtu(std::string_view body, std::string_view where) {
  PathMtuProbe probe;
  int line_no = 0;
  for (auto line : lines_of(body)) {
    ++line_no;
    const auto f = fields_of(line);
    if (f.empty()) continue;
    if (f[0] == "unresolved" && f.size() == 1) {
      probe.outcome = PathMtuProbe::Outcome::unresolved;
    } else if (f[0] == "noroute" && f.size() == 2) {
      probe.outcome = PathMtuProbe::Outcome::no_route;
      probe.address = std::string(f[1]);
    } else if (f[0] == "route" && f.size() == 4 && to_int(f[3]) && *to_int(f[3]) > 0) {
      probe.address = std::string(f[1]);
      probe.interface = std::string(f[2]);
      probe.mtu = *to_int(f[3]);
    } else if (f[0] == "nojumbo" && f.size() == 1) {
      probe.outcome = PathMtuProbe::Outcome::not_jumbo;
    } else if (f[0] == "noping" && f.size() == 1) {
      probe.outcome = PathMtuProbe::Outcome::no_ping;
    } else if (f[0] == "ping" && f.size() == 5 && to_int(f[1]) && to_int(f[2]) && to_int(f[3])) {
      PingAttempt a{*to_int(f[1]), *to_int(f[2]), *to_int(f[3]), std::nullopt};
      if (f[4] != "-") {
        const auto m = to_int(f[4]);
        if (!m) return std::unexpected(bad_line(line, where, line_no));
        a.reported_mtu = *m;
      }
      probe.attempts.push_back(a);
    } else {
      return std::unexpected(bad_line(line, where, line_no));
    }
  }
  if (probe.outcome == PathMtuProbe::Outcome::probed && probe.attempts.empty())
    return fail("the path-MTU section has no result", std::string(where),
                "the guest's facts report looks truncated; gather facts again");
  return probe;
}

PathMtuFinding classify_path_mtu(const PathMtuProbe& probe) {
  PathMtuFinding out;
  out.mtu = probe.mtu;
  if (probe.outcome == PathMtuProbe::Outcome::not_jumbo) {
    out.verdict = PathMtuVerdict::fits;
    return out;
  }
  if (probe.outcome != PathMtuProbe::Outcome::probed || probe.attempts.empty()) return out;
  const PingAttempt& full = probe.attempts.front();
  if (full.received > 0) {
    out.verdict = PathMtuVerdict::fits;
  } else if (full.reported_mtu && *full.reported_mtu < probe.mtu) {
    // Someone said why (a router's ICMP "fragmentation needed", or the guest's own route MTU):
    // the kernel's path-MTU discovery hears it too, so TCP sends smaller segments.
    out.verdict = PathMtuVerdict::smaller_hop;
    out.hop_mtu = full.reported_mtu;
  } else if (probe.attempts.size() > 1 && probe.attempts[1].received > 0) {
    out.verdict = PathMtuVerdict::black_hole;
  } else {
    out.verdict = PathMtuVerdict::unanswered;
  }
  return out;
}

std::string path_mtu_argument(std::string_view target) {
  return std::string(kPathMtuArgumentPrefix) + std::string(target);
}

bool is_path_mtu_target(std::string_view target) {
  if (is_name_to_resolve(target)) return true;
  // An IPv6 literal (an IPv4 one is already a name's characters).
  return !target.empty() && target.size() <= 45 && target.find(':') != std::string_view::npos &&
         target.find_first_not_of("0123456789abcdefABCDEF:.") == std::string_view::npos;
}

}  // namespace pw::guest
