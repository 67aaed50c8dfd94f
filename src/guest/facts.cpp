// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/facts.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "guest/script_output.hpp"
#include "guest/scripts.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {

bool is_name_to_resolve(std::string_view n) {
  return !n.empty() && n.size() <= 253 && n.front() != '-' &&
         n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
             std::string_view::npos;
}

Result<std::vector<std::string>> facts_arguments(std::span<const std::string> names,
                                                 std::span<const std::string> path_mtu_targets) {
  std::vector<std::string> out;
  out.reserve(names.size() + path_mtu_targets.size());
  for (const auto& n : names) {
    if (!is_name_to_resolve(n)) return fail("'" + n + "' is not a host name to resolve", {});
    out.push_back(n);
  }
  for (const auto& t : path_mtu_targets) {
    if (!is_path_mtu_target(t)) return fail("'" + t + "' is neither a host name nor an IP address to probe", {});
    out.push_back(path_mtu_argument(t));
  }
  return out;
}

std::string_view guest_report_script() {
  static const std::string text =
      "set -u\n" + std::string(scripts::marks) + std::string(scripts::statfs) + std::string(scripts::facts);
  return text;
}

namespace {

// One section of the report into the facts; a section this pathwarden does not know is skipped
// (a newer script may add one).
Status read_section(const std::string& name, std::string_view body, const std::string& host, GuestFacts& facts) {
  auto where = [&](std::string_view what) { return host + ":" + std::string(what); };
  auto take = [](auto result, auto& into) -> Status {
    if (!result) return std::unexpected(result.error());
    into = std::move(*result);
    return {};
  };
  if (name == "boot_id") {
    facts.boot_id = std::string(trim(body));
  } else if (name == "mounts") {
    return take(parse_proc_mounts(body, where("/proc/mounts")), facts.mounts);
  } else if (name == "mountstats") {
    return take(parse_mountstats(body, where("/proc/self/mountstats")), facts.mount_stats);
  } else if (name == "netdev") {
    return take(parse_proc_net_dev(body, where("/proc/net/dev")), facts.counters);
  } else if (name == "nfs_servers") {
    return take(parse_nfs_servers(body, where("/proc/fs/nfsfs/servers")), facts.nfs_servers);
  } else if (name == "statfs") {
    // After "mounts" (facts.sh's order): each answer belongs to a mount already read.
    return apply_statfs_answers(body, facts.mounts, where("stat -f"));
  } else if (name == "nfs_connections") {
    return take(parse_ss_tcp(body, where("ss")), facts.nfs_connections);
  } else if (name == "addresses") {
    return take(parse_ip_addr(body, where("ip -j addr")), facts.addresses);
  } else if (name == "sunrpc") {
    auto report = parse_sunrpc_section(body, where("/sys/kernel/sunrpc/xprt-switches"));
    if (!report) return std::unexpected(report.error());
    facts.transport_move = report->support;
    facts.sunrpc_transports = std::move(report->transports);
  } else if (name == "sudo") {
    auto check = parse_sudo_check(body, where("sudo -n true"));
    if (!check) return std::unexpected(check.error());
    facts.sudo = std::move(*check);
  } else if (name.starts_with("resolve ")) {
    facts.resolved[name.substr(8)] = parse_getent_ahosts(body);
  } else if (name.starts_with("pmtu ")) {
    auto probe = parse_path_mtu(body, where("ping -M do " + name.substr(5)));
    if (!probe) return std::unexpected(probe.error());
    facts.path_mtu[name.substr(5)] = std::move(*probe);
  } else if (name.starts_with("iface ")) {
    auto info = parse_interface_report(name.substr(6), body, where("/sys/class/net/" + name.substr(6)));
    if (!info) return std::unexpected(info.error());
    facts.interfaces.push_back(std::move(*info));
  }
  return {};
}

}  // namespace

Result<GuestFacts> parse_guest_report(std::string_view report, const std::string& host) {
  auto output = split_script_output(report, "facts report", host);
  if (!output) return std::unexpected(output.error());
  if (!output->finished) {
    return fail("the guest's facts report is incomplete (no end mark)", host,
                "check that /bin/sh works there and the task was not cut short");
  }
  const auto& sections = output->sections;
  if (sections.empty() || sections.front().words != std::vector<std::string>{"fstab"}) {
    return fail("the facts report has no fstab section", host, "was the right playbook run?");
  }
  auto fstab_content = decode_base64(sections.front().body);
  if (!fstab_content) return fail("the fstab came back in a form that is not base64", host);

  GuestFacts facts;
  facts.host = host;
  facts.fstab_sha256 = sha256_hex(*fstab_content);
  facts.fstab = FstabFile::parse(*fstab_content, host + ":/etc/fstab");
  facts.fstab_content = std::move(*fstab_content);

  for (const auto& sec : sections) {
    std::string name;
    for (const auto& w : sec.words) name += (name.empty() ? "" : " ") + w;
    if (name == "fstab") continue;
    if (auto st = read_section(name, sec.body, host, facts); !st) return std::unexpected(st.error());
  }
  return facts;
}

}  // namespace pw::guest

namespace pw::guest {

std::vector<std::string> parse_getent_ahosts(std::string_view output) {
  // "198.51.100.2    STREAM nas.lan" then DGRAM and RAW lines for the same address.
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < output.size()) {
    auto end = output.find('\n', start);
    auto line = output.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? output.size() : end + 1;
    auto first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    auto addr = line.substr(first, line.find_first_of(" \t", first) - first);
    if (std::find(out.begin(), out.end(), addr) == out.end()) out.emplace_back(addr);
  }
  return out;
}

}  // namespace pw::guest
