// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/mount_options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>

#include "diagnostics/suggest.hpp"

namespace pw::policy {
namespace {

enum class ValueKind { flag, integer, version, choice, text };

struct OptionRule {
  std::string_view name;
  ValueKind kind;
  long lo = 0, hi = 0;            // integer range
  std::string_view choices = {};  // choice: space-separated
};

// nfs(5) (nfs-utils 2.6) plus the generic mount(8) options that make sense on an NFS mount.
constexpr OptionRule kRules[] = {
    {"vers", ValueKind::version},
    {"nfsvers", ValueKind::version},
    {"minorversion", ValueKind::integer, 0, 2},
    {"nconnect", ValueKind::integer, 1, 16},  // NFS_MAX_CONNECTIONS
    {"max_connect", ValueKind::integer, 1, 16},
    {"soft", ValueKind::flag},
    {"hard", ValueKind::flag},
    {"softreval", ValueKind::flag},
    {"nosoftreval", ValueKind::flag},
    {"timeo", ValueKind::integer, 1, 6000000},
    {"retrans", ValueKind::integer, 0, 1000},
    {"rsize", ValueKind::integer, 1024, 1048576},
    {"wsize", ValueKind::integer, 1024, 1048576},
    {"ac", ValueKind::flag},
    {"noac", ValueKind::flag},
    {"acregmin", ValueKind::integer, 0, 1000000},
    {"acregmax", ValueKind::integer, 0, 1000000},
    {"acdirmin", ValueKind::integer, 0, 1000000},
    {"acdirmax", ValueKind::integer, 0, 1000000},
    {"actimeo", ValueKind::integer, 0, 1000000},
    {"bg", ValueKind::flag},
    {"fg", ValueKind::flag},
    {"rdirplus", ValueKind::flag},
    {"nordirplus", ValueKind::flag},
    {"retry", ValueKind::integer, 0, 100000},
    {"sec", ValueKind::choice, 0, 0, "sys krb5 krb5i krb5p none"},
    {"sharecache", ValueKind::flag},
    {"nosharecache", ValueKind::flag},
    {"resvport", ValueKind::flag},
    {"noresvport", ValueKind::flag},
    {"lookupcache", ValueKind::choice, 0, 0, "all none pos positive"},
    {"fsc", ValueKind::flag},
    {"nofsc", ValueKind::flag},
    {"sloppy", ValueKind::flag},
    {"proto", ValueKind::choice, 0, 0, "tcp tcp6 rdma rdma6 udp udp6"},
    {"tcp", ValueKind::flag},
    {"udp", ValueKind::flag},
    {"rdma", ValueKind::flag},
    {"port", ValueKind::integer, 0, 65535},
    {"mountport", ValueKind::integer, 0, 65535},
    {"mountproto", ValueKind::choice, 0, 0, "tcp tcp6 udp udp6"},
    {"mounthost", ValueKind::text},
    {"mountvers", ValueKind::integer, 1, 3},
    {"namlen", ValueKind::integer, 1, 255},
    {"lock", ValueKind::flag},
    {"nolock", ValueKind::flag},
    {"cto", ValueKind::flag},
    {"nocto", ValueKind::flag},
    {"acl", ValueKind::flag},
    {"noacl", ValueKind::flag},
    {"local_lock", ValueKind::choice, 0, 0, "all flock posix none"},
    {"clientaddr", ValueKind::text},
    {"addr", ValueKind::text},
    {"migration", ValueKind::flag},
    {"nomigration", ValueKind::flag},
    {"trunkdiscovery", ValueKind::flag},
    {"notrunkdiscovery", ValueKind::flag},
    {"write", ValueKind::choice, 0, 0, "lazy eager wait"},
    {"xprtsec", ValueKind::choice, 0, 0, "none tls mtls"},
    {"intr", ValueKind::flag},
    {"nointr", ValueKind::flag},
    // Generic mount(8) options.
    {"defaults", ValueKind::flag},
    {"rw", ValueKind::flag},
    {"ro", ValueKind::flag},
    {"sync", ValueKind::flag},
    {"async", ValueKind::flag},
    {"auto", ValueKind::flag},
    {"noauto", ValueKind::flag},
    {"_netdev", ValueKind::flag},
    {"nofail", ValueKind::flag},
    {"user", ValueKind::flag},
    {"nouser", ValueKind::flag},
    {"users", ValueKind::flag},
    {"exec", ValueKind::flag},
    {"noexec", ValueKind::flag},
    {"suid", ValueKind::flag},
    {"nosuid", ValueKind::flag},
    {"dev", ValueKind::flag},
    {"nodev", ValueKind::flag},
    {"atime", ValueKind::flag},
    {"noatime", ValueKind::flag},
    {"relatime", ValueKind::flag},
    {"norelatime", ValueKind::flag},
    {"nodiratime", ValueKind::flag},
    {"strictatime", ValueKind::flag},
    {"lazytime", ValueKind::flag},
};

// Pairs of which only one may be given.
constexpr std::array<std::pair<std::string_view, std::string_view>, 13> kExclusive{{
    {"ro", "rw"},
    {"sync", "async"},
    {"soft", "hard"},
    {"ac", "noac"},
    {"bg", "fg"},
    {"lock", "nolock"},
    {"cto", "nocto"},
    {"acl", "noacl"},
    {"auto", "noauto"},
    {"tcp", "udp"},
    {"resvport", "noresvport"},
    {"sharecache", "nosharecache"},
    {"rdirplus", "nordirplus"},
}};

const OptionRule* rule_for(std::string_view name) {
  for (const auto& r : kRules) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

bool is_choice(std::string_view choices, std::string_view value) {
  std::size_t start = 0;
  while (start < choices.size()) {
    auto sp = choices.find(' ', start);
    if (choices.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start) == value) return true;
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  return false;
}

std::optional<long> to_long(std::string_view s) {
  long n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return n;
}

// "3" / "4" / "4.0" / "4.1" / "4.2" → major and minor (minor -1 when unspecified).
std::optional<std::pair<int, int>> parse_version(std::string_view v) {
  if (v == "3") return std::pair{3, -1};
  if (v == "4") return std::pair{4, -1};
  if (v == "4.0") return std::pair{4, 0};
  if (v == "4.1") return std::pair{4, 1};
  if (v == "4.2") return std::pair{4, 2};
  return std::nullopt;
}

// Options of one policy share a file, so "12:15" says enough.
std::string line_col(const SourcePos& p) {
  return std::to_string(p.line) + ":" + std::to_string(p.column);
}

}  // namespace

// Every written mount option checked against what the kernel and pathwarden accept. Long because
// it is one table-like pass: each option's rule is a few lines, next to its message.
CheckedOptions check_mount_options(const std::vector<WrittenOption>& written, const std::string& server) {
  CheckedOptions out;
  auto& diags = out.diagnostics;
  std::map<std::string, std::pair<MountOption, SourcePos>> seen;
  std::vector<std::string_view> names;
  for (const auto& r : kRules) names.push_back(r.name);

  for (const auto& w : written) {
    const std::string& text = w.text;
    if (text.empty()) {
      diags.push_back({w.pos, "empty option (two commas in a row?)"});
      continue;
    }
    MountOption opt;
    if (auto eq = text.find('='); eq != std::string::npos) {
      opt.name = text.substr(0, eq);
      opt.value = text.substr(eq + 1);
    } else {
      opt.name = text;
    }
    if (opt.name.find_first_of(" \t\"'\\") != std::string::npos ||
        (opt.value && opt.value->find_first_of(" \t,\"'\\") != std::string::npos)) {
      diags.push_back({w.pos, "option '" + text +
                                  "' contains spaces, quotes, commas or backslashes, which fstab "
                                  "cannot carry in an option"});
      continue;
    }
    // mount(8)'s userspace options pass through: x-* and comment= (the name, as split above).
    const bool extension = opt.name.starts_with("x-") || (opt.name == "comment" && opt.value);
    const OptionRule* rule = extension ? nullptr : rule_for(opt.name);
    if (!extension && rule == nullptr) {
      std::string msg = "unknown mount option '" + opt.name + "'" + did_you_mean(opt.name, names);
      if (opt.name == "remount" || opt.name == "bind" || opt.name == "loop") {
        msg = "'" + opt.name + "' is not an NFS mount option; pathwarden re-makes mounts itself";
      }
      diags.push_back({w.pos, msg});
      continue;
    }
    if (rule != nullptr) {
      if (rule->kind == ValueKind::flag && opt.value) {
        diags.push_back({w.pos, "option '" + opt.name + "' takes no value (write just '" + opt.name + "')"});
        continue;
      }
      if (rule->kind != ValueKind::flag && (!opt.value || opt.value->empty())) {
        diags.push_back({w.pos, "option '" + opt.name + "' needs a value, e.g. '" + opt.name + "=...'"});
        continue;
      }
      bool ok = true;
      switch (rule->kind) {
        case ValueKind::integer: {
          auto n = to_long(*opt.value);
          if (!n || *n < rule->lo || *n > rule->hi) {
            diags.push_back({w.pos, "'" + text + "': " + opt.name + " must be a whole number from " +
                                        std::to_string(rule->lo) + " to " + std::to_string(rule->hi)});
            ok = false;
          }
          break;
        }
        case ValueKind::version:
          if (*opt.value == "2") {
            diags.push_back({w.pos, "'" + text + "': NFSv2 is not supported; use vers=3 or 4.x"});
            ok = false;
          } else if (!parse_version(*opt.value)) {
            diags.push_back({w.pos, "'" + text + "': NFS version must be 3, 4, 4.0, 4.1 or 4.2"});
            ok = false;
          }
          break;
        case ValueKind::choice:
          if (!is_choice(rule->choices, *opt.value)) {
            diags.push_back({w.pos, "'" + text + "': " + opt.name + " must be one of: " + std::string(rule->choices)});
            ok = false;
          }
          break;
        case ValueKind::text:
        case ValueKind::flag:
          break;
      }
      if (!ok) continue;
    }
    if (auto prev = seen.find(opt.name); prev != seen.end()) {
      diags.push_back(
          {w.pos, "option '" + opt.name + "' is given twice (first at " + line_col(prev->second.second) + ")"});
      continue;
    }
    seen.emplace(opt.name, std::pair{opt, w.pos});
    out.options.push_back(std::move(opt));
  }

  auto find = [&](std::string_view n) -> const std::pair<MountOption, SourcePos>* {
    auto it = seen.find(std::string(n));
    return it == seen.end() ? nullptr : &it->second;
  };
  for (const auto& [a, b] : kExclusive) {
    const auto* first = find(a);
    const auto* second = find(b);
    if (first && second) {
      const auto& later = first->second.line > second->second.line || (first->second.line == second->second.line &&
                                                                       first->second.column > second->second.column)
                              ? *first
                              : *second;
      const auto& earlier = &later == first ? *second : *first;
      diags.push_back({later.second, "'" + later.first.to_string() + "' contradicts '" + earlier.first.to_string() +
                                         "' at " + line_col(earlier.second) + "; keep one"});
    }
  }
  const auto* vers = find("vers");
  const auto* nfsvers = find("nfsvers");
  if (vers && nfsvers && vers->first.value != nfsvers->first.value) {
    diags.push_back({nfsvers->second, "'" + nfsvers->first.to_string() + "' contradicts '" + vers->first.to_string() +
                                          "' at " + line_col(vers->second) + "; keep one NFS version"});
  }
  const auto* version = vers ? vers : nfsvers;
  // {major, minor}; minor -1 when the version names none ("vers=4"); {0, -1}: no version known.
  const auto [major, minor_version] =
      (version ? parse_version(*version->first.value) : std::nullopt).value_or(std::pair{0, -1});
  const bool known_version = major != 0;
  if (const auto* minor = find("minorversion")) {
    if (known_version && (major != 4 || minor_version >= 0)) {
      diags.push_back({minor->second, "'minorversion' contradicts '" + version->first.to_string() +
                                          "'; write the version as vers=4.N instead"});
    }
  }
  if (const auto* mc = find("max_connect")) {
    if (known_version && (major == 3 || minor_version == 0)) {
      diags.push_back(
          {mc->second, "'max_connect' only applies to NFSv4.1 and later, not '" + version->first.to_string() + "'"});
    }
  }
  if (const auto* nc = find("nconnect")) {
    const auto* proto = find("proto");
    const auto* udp = find("udp");
    if (udp || (proto && proto->first.value->starts_with("udp"))) {
      diags.push_back({nc->second, "'nconnect' needs TCP; it contradicts UDP transport"});
    }
  }
  if (const auto* addr = find("addr")) {
    if (*addr->first.value != server) {
      diags.push_back({addr->second, "'" + addr->first.to_string() + "' contradicts the mount's server '" + server +
                                         "'; remove addr= (pathwarden mounts the server address)"});
    }
  }
  return out;
}

}  // namespace pw::policy
