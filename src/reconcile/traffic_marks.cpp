// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/traffic_marks.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "proxmox/net_device.hpp"
#include "reconcile/context.hpp"

namespace pw::reconcile {
namespace json = boost::json;
namespace {

std::optional<std::uint64_t> unsigned_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return std::nullopt;
}

std::optional<std::string> text_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

json::value counter(const std::optional<std::uint64_t>& c) {
  return c ? json::value(*c) : json::value(nullptr);
}

// "net7" → 7, and nothing else.
std::optional<int> net_number(std::string_view key) {
  return proxmox::net_index(key);
}

}  // namespace

verify::TrafficMark mark_of(const plan::ProvePath& proof, const guest::GuestFacts& facts,
                            const proxmox::VmConfig* config, const proxmox::VmStatus* status, std::string taps_missing,
                            std::string taken_at) {
  verify::TrafficMark m;
  m.taken_at = std::move(taken_at);
  verify::DesiredPath nas;
  nas.server = proof.server;
  nas.nas_addresses = proof.nas_addresses;
  for (const auto& c : facts.nfs_connections) {
    verify::ConnectionCounters cc{{c.local_address, static_cast<std::uint16_t>(c.local_port), c.peer_address,
                                   static_cast<std::uint16_t>(c.peer_port)},
                                  c.bytes_received,
                                  c.bytes_acked};
    if (verify::to_nas(nas, cc.connection)) m.connections.push_back(std::move(cc));
  }
  if (config != nullptr) {
    for (const auto& [key, value] : config->nics()) {
      if (auto n = net_number(key)) m.nic_lines[*n] = value;
    }
  }
  if (status == nullptr) {
    m.taps_unavailable = taps_missing.empty() ? "the tap counters were not read" : std::move(taps_missing);
    return m;
  }
  m.node = status->ref.node;
  m.pid = status->pid;
  for (const auto& [n, t] : status->nics) m.taps[n] = {t.netin, t.netout};
  if (m.taps.empty()) m.taps_unavailable = "Proxmox sent no tap counters (\"nics\") for " + status->ref.to_string();
  return m;
}

json::value to_json(const verify::TrafficMark& m) {
  json::array conns;
  for (const auto& c : m.connections) {
    conns.push_back(json::object{{"local", c.connection.local_address},
                                 {"local_port", c.connection.local_port},
                                 {"remote", c.connection.remote_address},
                                 {"remote_port", c.connection.remote_port},
                                 {"bytes_received", counter(c.bytes_received)},
                                 {"bytes_acked", counter(c.bytes_acked)}});
  }
  json::object taps;
  for (const auto& [n, t] : m.taps)
    taps["net" + std::to_string(n)] = json::object{{"netin", t.guest_rx}, {"netout", t.guest_tx}};
  json::object lines;
  for (const auto& [n, l] : m.nic_lines) lines["net" + std::to_string(n)] = l;
  return json::object{{"taken_at", m.taken_at},
                      {"connections", std::move(conns)},
                      {"node", m.node},
                      {"pid", m.pid ? json::value(*m.pid) : json::value(nullptr)},
                      {"taps", std::move(taps)},
                      {"nic_lines", std::move(lines)},
                      {"taps_unavailable", m.taps_unavailable}};
}

std::optional<verify::TrafficMark> traffic_mark_from(const json::value& v) {
  if (!v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  verify::TrafficMark m;
  auto at = text_of(o, "taken_at");
  if (!at || at->empty()) return std::nullopt;
  m.taken_at = *at;
  m.node = text_of(o, "node").value_or("");
  m.taps_unavailable = text_of(o, "taps_unavailable").value_or("");
  if (const auto* p = o.if_contains("pid"); p != nullptr && p->is_int64())
    m.pid = p->as_int64();
  else if (p != nullptr && p->is_uint64() && p->as_uint64() <= std::numeric_limits<std::int64_t>::max())
    m.pid = static_cast<std::int64_t>(p->as_uint64());
  const auto* conns = o.if_contains("connections");
  if (conns == nullptr || !conns->is_array()) return std::nullopt;
  for (const auto& c : conns->as_array()) {
    if (!c.is_object()) return std::nullopt;
    const auto& co = c.as_object();
    auto local = text_of(co, "local"), remote = text_of(co, "remote");
    auto lport = unsigned_of(co, "local_port"), rport = unsigned_of(co, "remote_port");
    if (!local || !remote || !lport || !rport || *lport > 65535 || *rport > 65535) return std::nullopt;
    m.connections.push_back({{*local, static_cast<std::uint16_t>(*lport), *remote, static_cast<std::uint16_t>(*rport)},
                             unsigned_of(co, "bytes_received"),
                             unsigned_of(co, "bytes_acked")});
  }
  if (const auto* taps = o.if_contains("taps"); taps != nullptr && taps->is_object()) {
    for (const auto& kv : taps->as_object()) {
      const auto n = net_number(kv.key());
      if (!n || !kv.value().is_object()) return std::nullopt;
      auto in = unsigned_of(kv.value().as_object(), "netin"), out = unsigned_of(kv.value().as_object(), "netout");
      if (!in || !out) return std::nullopt;
      m.taps[*n] = {*in, *out};
    }
  }
  if (const auto* lines = o.if_contains("nic_lines"); lines != nullptr && lines->is_object()) {
    for (const auto& kv : lines->as_object()) {
      const auto n = net_number(kv.key());
      if (!n || !kv.value().is_string()) return std::nullopt;
      m.nic_lines[*n] = std::string(kv.value().get_string());
    }
  }
  return m;
}

std::optional<verify::TrafficMark> stored_mark(journal::PolicyResultStore& results, std::string_view policy) {
  auto stored = results.get(policy);
  if (!stored || !*stored) return std::nullopt;
  const auto* mark = (*stored)->details.if_contains(kTrafficMarkKey);
  if (mark == nullptr) return std::nullopt;
  return traffic_mark_from(*mark);
}

NodeStatuses read_node_statuses(proxmox::Api& api, std::span<const proxmox::VmRef> vms) {
  NodeStatuses out;
  std::vector<std::string> nodes;
  const std::set<proxmox::VmRef> wanted(vms.begin(), vms.end());
  for (const auto& vm : wanted) {
    if (nodes.empty() || nodes.back() != vm.node) nodes.push_back(vm.node);  // the set is sorted by node first
  }
  if (nodes.empty()) return out;
  auto lists = api.node_vm_statuses(nodes);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i >= lists.size()) {
      out.failed[nodes[i]] = "no answer";
      continue;
    }
    if (!lists[i]) {
      out.failed[nodes[i]] = describe(lists[i].error());
      continue;
    }
    for (auto& s : *lists[i]) {
      if (wanted.contains(s.ref)) out.by_vm.emplace(s.ref, std::move(s));
    }
  }
  return out;
}

}  // namespace pw::reconcile
