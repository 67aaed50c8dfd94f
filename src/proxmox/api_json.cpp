// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/api_json.hpp"

#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace pw::proxmox::json {
namespace {

namespace bj = boost::json;

Result<bj::value> data_of(std::string_view body) {
  boost::system::error_code ec;
  bj::value v = bj::parse(body, ec);
  if (ec) {
    std::string head(body.substr(0, 80));
    return fail("the answer is not JSON (" + ec.message() + "): '" + head + "'", {},
                "is the URL a Proxmox VE API endpoint?");
  }
  if (!v.is_object() || !v.as_object().contains("data")) {
    return fail("the answer has no 'data' member", {}, "is the URL a Proxmox VE API endpoint?");
  }
  return std::move(v.as_object().at("data"));  // moved, not copied: a 10,000-guest list is megabytes
}

// Proxmox sends some numbers as strings and some strings as numbers; both become text here.
std::optional<std::string> text_of(const bj::value* v) {
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64()) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  if (v->is_bool()) return v->as_bool() ? "1" : "0";
  if (v->is_double()) {
    const double d = v->as_double();
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", d);
    return std::string(buf);
  }
  return bj::serialize(*v);
}

std::optional<std::string> member_text(const bj::object& o, std::string_view key) {
  return text_of(o.if_contains(key));
}

std::optional<std::int64_t> member_int(const bj::object& o, std::string_view key) {
  auto t = member_text(o, key);
  if (!t || t->empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long n = std::stoll(*t, &used);
    if (used != t->size()) return std::nullopt;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Result<const bj::array*> array_of(const bj::value& data, std::string_view what) {
  if (!data.is_array()) return fail("expected a list of " + std::string(what) + " in 'data'");
  return &data.as_array();
}

Result<const bj::object*> object_of(const bj::value& data, std::string_view what) {
  if (!data.is_object()) return fail("expected " + std::string(what) + " as an object in 'data'");
  return &data.as_object();
}

// A byte counter: qemu-server int()s them, so Perl's JSON encoder sends numbers, but a proxy or
// another Perl path that stringifies a value would send "123"; both are taken, nothing else.
std::optional<std::uint64_t> counter_of(const bj::value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64()) {
    if (v->as_int64() < 0) return std::nullopt;
    return static_cast<std::uint64_t>(v->as_int64());
  }
  if (v->is_double()) {
    const double d = v->as_double();
    // 2^64 itself is not representable; below it every integral double converts exactly.
    if (d < 0 || std::floor(d) != d || d >= 18446744073709551616.0) return std::nullopt;
    return static_cast<std::uint64_t>(d);
  }
  if (v->is_string()) {
    const std::string_view t = v->as_string();
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (ec != std::errc{} || end != t.data() + t.size() || t.empty()) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

// The N of "tap<vmid>i<N>", the tap name qemu-server gives netN (PVE/QemuServer.pm, "tap${vmid}i$i");
// nullopt for any other name, including another VM's tap.
std::optional<int> tap_index(std::string_view key, int vmid) {
  const std::string prefix = "tap" + std::to_string(vmid) + "i";
  if (!key.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = key.substr(prefix.size());
  int n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || n < 0) return std::nullopt;
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;  // "tap101i01" is no tap Proxmox makes
  return n;
}

// status/current's "nics" (qemu-server vmstatus with $full): every tap of the VM on the node. An
// entry that is not one of this VM's taps with two counters is set aside, never guessed at.
void parse_nics(const bj::object& status, VmStatus& out) {
  const bj::value* nics = status.if_contains("nics");
  if (nics == nullptr || nics->is_null()) return;  // stopped VM, or a Proxmox that does not send it
  if (!nics->is_object()) {
    out.ignored_nics.push_back({"nics", "not an object of taps"});
    return;
  }
  for (const auto& [key, value] : nics->as_object()) {
    const std::string name(key);
    const auto index = tap_index(name, out.ref.vmid);
    if (!index) {
      out.ignored_nics.push_back(
          {name, "not a tap of VM " + std::to_string(out.ref.vmid) + " (tap" + std::to_string(out.ref.vmid) + "i<N>)"});
      continue;
    }
    const bj::object* counters = value.if_object();
    const auto netin = counters ? counter_of(counters->if_contains("netin")) : std::nullopt;
    const auto netout = counters ? counter_of(counters->if_contains("netout")) : std::nullopt;
    if (!netin || !netout) {
      out.ignored_nics.push_back({name, "netin and netout are not both non-negative integers"});
      continue;
    }
    out.nics[*index] = TapCounters{*netin, *netout};
  }
}

}  // namespace

Result<std::string> parse_version(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto obj = object_of(*data, "the version");
  if (!obj) return std::unexpected(obj.error());
  auto v = member_text(**obj, "version");
  if (!v) return fail("the version answer has no 'version'");
  return *v;
}

Result<std::vector<GuestSummary>> parse_guests(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "cluster resources");
  if (!arr) return std::unexpected(arr.error());
  std::vector<GuestSummary> out;
  for (const auto& item : **arr) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    const auto type = member_text(o, "type").value_or("");
    if (type != "qemu" && type != "lxc") continue;  // type=vm lists guests only, but be strict
    GuestSummary g;
    g.type = type == "qemu" ? GuestType::qemu : GuestType::lxc;
    auto vmid = member_int(o, "vmid");
    if (!vmid) {
      // Older versions carry the id only in "id": "qemu/101".
      auto id = member_text(o, "id").value_or("");
      auto slash = id.find('/');
      try {
        if (slash != std::string::npos) vmid = std::stoll(id.substr(slash + 1));
      } catch (const std::exception&) {
      }
    }
    if (!vmid) return fail("a guest in the cluster resources has no vmid");
    // Proxmox's range; a larger number must not wrap around to some other VM's id.
    if (*vmid < 1 || *vmid > 999'999'999)
      return fail("a guest in the cluster resources has vmid " + std::to_string(*vmid));
    g.ref = VmRef{member_text(o, "node").value_or(""), static_cast<int>(*vmid)};
    g.name = member_text(o, "name").value_or("");
    g.status = member_text(o, "status").value_or("");
    g.template_ = member_int(o, "template").value_or(0) != 0;
    g.lock = member_text(o, "lock").value_or("");
    g.tags = member_text(o, "tags").value_or("");
    out.push_back(std::move(g));
  }
  return out;
}

Result<std::vector<NodeSummary>> parse_nodes(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "nodes");
  if (!arr) return std::unexpected(arr.error());
  std::vector<NodeSummary> out;
  for (const auto& item : **arr) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    out.push_back(NodeSummary{member_text(o, "node").value_or(""), member_text(o, "status").value_or(""),
                              member_text(o, "ssl_fingerprint").value_or("")});
  }
  return out;
}

Result<VmConfig> parse_config(std::string_view body, const VmRef& ref, bool current) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto obj = object_of(*data, "the VM config");
  if (!obj) return std::unexpected(obj.error());
  VmConfig cfg;
  cfg.ref = ref;
  cfg.current = current;
  for (const auto& [k, v] : **obj) {
    auto text = text_of(&v);
    if (k == "digest") {
      cfg.digest = text.value_or("");
    } else if (text) {
      cfg.entries.emplace_back(std::string(k), std::move(*text));
    }
  }
  if (cfg.digest.empty())
    return fail("the VM config has no digest", {}, "Proxmox always sends one; is this Proxmox VE?");
  return cfg;
}

Result<PendingConfig> parse_pending(std::string_view body, const VmRef& ref) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "pending items");
  if (!arr) return std::unexpected(arr.error());
  PendingConfig out;
  out.ref = ref;
  for (const auto& item : **arr) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    auto key = member_text(o, "key");
    if (!key) continue;
    if (*key == "digest") {
      out.digest = member_text(o, "value").value_or("");
      continue;
    }
    // Two items for one key would contradict each other: which one is pending?
    if (out.find(*key) != nullptr) return fail("the pending answer lists '" + *key + "' twice");
    PendingItem p;
    p.key = *key;
    p.value = member_text(o, "value");
    p.pending = member_text(o, "pending");
    // 1 = delete, 2 = forced delete; any other non-zero marker is still a pending delete.
    const auto del = member_int(o, "delete").value_or(0);
    p.delete_ = del == 0 ? 0 : del == 2 ? 2 : 1;
    out.items.push_back(std::move(p));
  }
  return out;
}

Result<std::set<std::string>> parse_permissions(std::string_view body, const std::string& path) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto obj = object_of(*data, "the permissions");
  if (!obj) return std::unexpected(obj.error());
  std::set<std::string> privs;
  if (const auto* at = (*obj)->if_contains(path)) {
    if (!at->is_object()) return fail("the permissions of " + path + " are not an object");
    for (const auto& kv : at->as_object()) privs.emplace(kv.key());
  }
  return privs;
}

namespace {

Result<VmStatus> vm_status_of(const bj::object& o, const VmRef& ref) {
  VmStatus s;
  s.ref = ref;
  s.status = member_text(o, "status").value_or("");
  if (s.status.empty()) return fail("the VM status has no 'status'");
  s.qmpstatus = member_text(o, "qmpstatus").value_or("");
  s.name = member_text(o, "name").value_or("");
  s.lock = member_text(o, "lock").value_or("");
  s.pid = member_int(o, "pid");
  s.uptime = member_int(o, "uptime");
  parse_nics(o, s);
  return s;
}

}  // namespace

Result<VmStatus> parse_vm_status(std::string_view body, const VmRef& ref) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto obj = object_of(*data, "the VM status");
  if (!obj) return std::unexpected(obj.error());
  return vm_status_of(**obj, ref);
}

Result<std::vector<VmStatus>> parse_vm_list(std::string_view body, const std::string& node) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "the node's VMs");
  if (!arr) return std::unexpected(arr.error());
  std::vector<VmStatus> out;
  for (const auto& item : **arr) {
    if (!item.is_object()) return fail("an entry of the node's VMs is not an object");
    const auto& o = item.as_object();
    const auto vmid = member_int(o, "vmid");
    if (!vmid || *vmid <= 0 || *vmid > 999999999) return fail("an entry of the node's VMs has no valid 'vmid'");
    auto s = vm_status_of(o, VmRef{node, static_cast<int>(*vmid)});
    if (!s) return std::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::optional<Upid>> parse_optional_upid(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  if (data->is_null()) return std::optional<Upid>();
  if (!data->is_string()) return fail("expected a task id (UPID) or null in 'data'");
  auto upid = Upid::parse(std::string_view(data->as_string()));
  if (!upid) return std::unexpected(upid.error());
  return std::optional<Upid>(std::move(*upid));
}

Result<TaskStatus> parse_task_status(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto obj = object_of(*data, "the task status");
  if (!obj) return std::unexpected(obj.error());
  const auto& o = **obj;
  auto upid_text = member_text(o, "upid");
  if (!upid_text) return fail("the task status has no 'upid'");
  auto upid = Upid::parse(*upid_text);
  if (!upid) return std::unexpected(upid.error());
  TaskStatus t;
  t.upid = std::move(*upid);
  const auto status = member_text(o, "status").value_or("");
  if (status != "running" && status != "stopped") return fail("unknown task status '" + status + "'");
  t.running = status == "running";
  t.exitstatus = member_text(o, "exitstatus").value_or("");
  return t;
}

Result<std::vector<TaskStatus>> parse_task_list(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "tasks");
  if (!arr) return std::unexpected(arr.error());
  std::vector<TaskStatus> out;
  for (const auto& item : **arr) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    auto upid = Upid::parse(member_text(o, "upid").value_or(""));
    if (!upid) continue;  // a task line Proxmox could not decode either
    TaskStatus t;
    t.upid = std::move(*upid);
    const auto status = member_text(o, "status").value_or("");
    t.running = status == "RUNNING";
    if (!t.running) t.exitstatus = status;
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<std::string>> parse_task_log(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "the task log");
  if (!arr) return std::unexpected(arr.error());
  std::vector<std::string> out;
  for (const auto& item : **arr) {
    if (item.is_object()) out.push_back(member_text(item.as_object(), "t").value_or(""));
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_sdn_vnets(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto arr = array_of(*data, "SDN VNets");
  if (!arr) return std::unexpected(arr.error());
  std::map<std::string, std::string> out;
  for (const auto& item : **arr) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    auto vnet = member_text(o, "vnet");
    auto zone = member_text(o, "zone");
    if (vnet && zone) out[*vnet] = *zone;
  }
  return out;
}

Result<Ticket> parse_ticket(std::string_view body) {
  auto data = data_of(body);
  if (!data) return std::unexpected(data.error());
  auto obj = object_of(*data, "the ticket");
  if (!obj) return std::unexpected(obj.error());
  Ticket t;
  t.username = member_text(**obj, "username").value_or("");
  t.ticket = member_text(**obj, "ticket").value_or("");
  t.csrf_token = member_text(**obj, "CSRFPreventionToken").value_or("");
  if (t.ticket.empty() || t.csrf_token.empty()) return fail("the ticket answer lacks ticket or CSRFPreventionToken");
  return t;
}

std::string percent_encode(std::string_view value, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

}  // namespace pw::proxmox::json
