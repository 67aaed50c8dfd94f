// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/mountstats.hpp"

#include <algorithm>
#include <span>

#include "guest/tokens.hpp"

namespace pw::guest {

namespace {

Result<RpcTransport> parse_xprt(std::span<const std::string_view> fields, const std::string& where) {
  RpcTransport t;
  if (fields.empty()) return fail("xprt line without a protocol", where);
  t.protocol = std::string(fields[0]);
  for (auto f : fields.subspan(1)) {
    auto n = to_uint64(f);
    if (!n) return fail("xprt field '" + std::string(f) + "' is not a number", where);
    t.fields.push_back(*n);
  }
  auto field = [&](std::size_t i) -> std::uint64_t { return i < t.fields.size() ? t.fields[i] : 0; };
  const bool has_port = t.protocol == "tcp" || t.protocol == "tcp6" || t.protocol == "udp" || t.protocol == "udp6";
  if (has_port && field(0) > 65535)
    return fail("xprt source port " + std::to_string(field(0)) + " is not a port", where);
  if (t.protocol == "tcp" || t.protocol == "tcp6") {
    // tcp <srcport> <bind_count> <connect_count> <connect_time> <idle_time> <sends> <recvs> ...
    if (!t.fields.empty()) t.source_port = static_cast<int>(field(0));
    t.sends = field(5);
    t.receives = field(6);
  } else if (t.protocol == "udp" || t.protocol == "udp6") {
    // udp <srcport> <bind_count> <sends> <recvs> ...
    if (!t.fields.empty()) t.source_port = static_cast<int>(field(0));
    t.sends = field(2);
    t.receives = field(3);
  } else if (t.protocol == "rdma") {
    // rdma 0 <bind_count> <connect_count> <connect_time> <idle_time> <sends> <recvs> ...
    t.sends = field(5);
    t.receives = field(6);
  }
  return t;
}

}  // namespace

Result<std::vector<MountStats>> parse_mountstats(std::string_view text, std::string_view where) {
  std::vector<MountStats> out;
  int line_no = 0;
  bool in_per_op = false;
  for (auto line : lines_of(text)) {
    ++line_no;
    const std::string at = std::string(where) + ":" + std::to_string(line_no);
    auto fields = fields_of(line);
    if (fields.empty()) continue;
    // The kernel (fs/proc_namespace.c show_vfsstat) prints "no device mounted on MNT with fstype
    // TYPE" for a mount without a device name: same columns, no device.
    const bool no_device = fields.size() >= 2 && fields[0] == "no" && fields[1] == "device";
    if (fields[0] == "device" || no_device) {
      // device DEV mounted on MNT with fstype TYPE [statvers=X]
      if (fields.size() < 8 || fields[2] != "mounted" || fields[3] != "on" || fields[5] != "with" ||
          fields[6] != "fstype") {
        return fail("unexpected device line in mountstats", at + ":1",
                    "expected 'device DEV mounted on PATH with fstype TYPE'");
      }
      MountStats s;
      if (!no_device) s.device = decode_octal_escapes(fields[1]);
      s.mount_point = decode_octal_escapes(fields[4]);
      s.fstype = std::string(fields[7]);
      if (fields.size() > 8 && fields[8].starts_with("statvers=")) s.statvers = std::string(fields[8].substr(9));
      out.push_back(std::move(s));
      in_per_op = false;
      continue;
    }
    if (out.empty()) return fail("mountstats line before any device line", at + ":1");
    auto& s = out.back();
    if (in_per_op) continue;
    if (fields[0] == "per-op") {
      in_per_op = true;
    } else if (fields[0] == "opts:") {
      s.options = fields.size() > 1 ? std::string(fields[1]) : std::string();
    } else if (fields[0] == "age:") {
      if (fields.size() > 1) s.age_seconds = to_uint64(fields[1]);
    } else if (fields[0] == "bytes:") {
      std::vector<std::uint64_t> v;
      for (std::size_t i = 1; i < fields.size(); ++i) v.push_back(to_uint64(fields[i]).value_or(0));
      v.resize(8, 0);
      s.bytes = NfsByteCounters{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    } else if (fields[0] == "xprt:") {
      auto t = parse_xprt(std::span(fields).subspan(1), at);
      if (!t) return std::unexpected(t.error());
      s.transports.push_back(std::move(*t));
    } else if (fields[0] == "RPC") {
      auto pv = std::find(fields.begin(), fields.end(), std::string_view("p/v:"));
      if (pv != fields.end() && pv + 1 != fields.end()) s.rpc_program = std::string(*(pv + 1));
    }
  }
  return out;
}

std::vector<MountStats> nfs_only(std::vector<MountStats> stats) {
  std::erase_if(stats, [](const MountStats& s) { return !s.is_nfs(); });
  return stats;
}

}  // namespace pw::guest
