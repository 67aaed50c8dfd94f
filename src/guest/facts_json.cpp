// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/facts_json.hpp"

#include <boost/json.hpp>

namespace pw::guest {
namespace {

namespace json = boost::json;

template <class T>
json::value opt(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::value channels(const ChannelCounts& c) {
  return json::object{{"rx", opt(c.rx)}, {"tx", opt(c.tx)}, {"other", opt(c.other)}, {"combined", opt(c.combined)}};
}

json::value mount(const MountInfo& m) {
  json::array options;
  for (const auto& o : m.options) options.emplace_back(o.value ? o.name + "=" + *o.value : o.name);
  json::object out{
      {"device", m.device}, {"mount_point", m.mount_point}, {"fstype", m.fstype}, {"options", std::move(options)}};
  if (m.answer != MountAnswer::unknown) out["answer"] = to_string(m.answer);
  if (!m.answer_error.empty()) out["answer_error"] = m.answer_error;
  return out;
}

json::value stats(const MountStats& s) {
  json::array transports;
  for (const auto& t : s.transports) {
    json::array fields(t.fields.begin(), t.fields.end());
    transports.emplace_back(json::object{{"protocol", t.protocol},
                                         {"source_port", opt(t.source_port)},
                                         {"sends", t.sends},
                                         {"receives", t.receives},
                                         {"fields", std::move(fields)}});
  }
  json::value bytes = nullptr;
  if (s.bytes) {
    const auto& b = *s.bytes;
    bytes = json::object{{"normal_read", b.normal_read}, {"normal_write", b.normal_write},
                         {"direct_read", b.direct_read}, {"direct_write", b.direct_write},
                         {"server_read", b.server_read}, {"server_write", b.server_write},
                         {"read_pages", b.read_pages},   {"write_pages", b.write_pages}};
  }
  return json::object{{"device", s.device},
                      {"mount_point", s.mount_point},
                      {"fstype", s.fstype},
                      {"statvers", s.statvers},
                      {"options", s.options},
                      {"rpc_program", s.rpc_program},
                      {"age_seconds", opt(s.age_seconds)},
                      {"bytes", std::move(bytes)},
                      {"transports", std::move(transports)}};
}

json::value interface(const InterfaceInfo& i) {
  json::value ch = nullptr;
  if (i.channels) {
    ch = json::object{{"maximum", channels(i.channels->maximum)}, {"current", channels(i.channels->current)}};
  }
  return json::object{{"name", i.name},
                      {"mac", i.mac.str()},
                      {"permanent_mac", i.permanent_mac.str()},
                      {"lowers", json::array(i.lowers.begin(), i.lowers.end())},
                      {"lowers_unknown", i.lowers_unknown},
                      {"ifindex", opt(i.ifindex)},
                      {"speed_mbps", opt(i.speed_mbps)},
                      {"operstate", i.operstate},
                      {"mtu", opt(i.mtu)},
                      {"rx_queues", i.rx_queues},
                      {"tx_queues", i.tx_queues},
                      {"queues_unknown", i.queues_unknown},
                      {"channels", std::move(ch)}};
}

json::value connection(const TcpConnection& c) {
  json::object info;
  for (const auto& [k, v] : c.info) info[k] = v;
  return json::object{{"state", c.state},
                      {"local_address", c.local_address},
                      {"local_port", c.local_port},
                      {"peer_address", c.peer_address},
                      {"peer_port", c.peer_port},
                      {"bytes_acked", opt(c.bytes_acked)},
                      {"bytes_received", opt(c.bytes_received)},
                      {"bytes_sent", opt(c.bytes_sent)},
                      {"info", std::move(info)}};
}

json::value counters(const InterfaceCounters& c) {
  return json::object{{"name", c.name},
                      {"rx_bytes", c.rx_bytes},
                      {"rx_packets", c.rx_packets},
                      {"rx_errors", c.rx_errors},
                      {"rx_dropped", c.rx_dropped},
                      {"tx_bytes", c.tx_bytes},
                      {"tx_packets", c.tx_packets},
                      {"tx_errors", c.tx_errors},
                      {"tx_dropped", c.tx_dropped}};
}

json::value server(const NfsServer& s) {
  return json::object{{"version", s.version}, {"address", s.address},     {"address_hex", s.address_hex},
                      {"port", s.port},       {"use_count", s.use_count}, {"hostname", s.hostname}};
}

json::value docker(const std::optional<Result<std::vector<DockerVolume>>>& d) {
  if (!d) return nullptr;
  if (!*d) return json::object{{"error", d->error().to_string()}};
  json::array volumes;
  for (const auto& v : **d) {
    json::object options;
    for (const auto& [k, val] : v.options) options[k] = val;
    volumes.emplace_back(json::object{{"name", v.name},
                                      {"driver", v.driver},
                                      {"mountpoint", v.mountpoint},
                                      {"options", std::move(options)},
                                      {"compose_project", v.compose_project},
                                      {"compose_volume", v.compose_volume}});
  }
  return json::object{{"volumes", std::move(volumes)}};
}

json::value path_mtu(const PathMtuProbe& p) {
  static constexpr std::string_view kOutcomes[] = {"probed", "unresolved", "no-route", "not-jumbo", "no-ping"};
  json::array attempts;
  for (const auto& a : p.attempts) {
    attempts.emplace_back(json::object{{"payload", a.payload},
                                       {"exit_status", a.exit_status},
                                       {"received", a.received},
                                       {"reported_mtu", opt(a.reported_mtu)}});
  }
  return json::object{{"outcome", kOutcomes[static_cast<int>(p.outcome)]},
                      {"address", p.address},
                      {"interface", p.interface},
                      {"mtu", p.mtu},
                      {"attempts", std::move(attempts)}};
}

json::value sunrpc(const GuestFacts& f) {
  static constexpr std::string_view kSupport[] = {"unknown", "present", "absent"};
  json::array transports;
  for (const auto& t : f.sunrpc_transports) {
    transports.emplace_back(json::object{{"switch", t.switch_name},
                                         {"transport", t.name},
                                         {"dstaddr", t.dstaddr},
                                         {"main", opt(t.main)},
                                         {"dst_port", opt(t.dst_port)}});
  }
  return json::object{{"tree", kSupport[static_cast<int>(f.transport_move)]}, {"transports", std::move(transports)}};
}

}  // namespace

json::value to_json(const GuestFacts& f) {
  json::array mounts, mount_stats, counter_list, interfaces, connections, addresses, servers;
  for (const auto& m : f.mounts) mounts.push_back(mount(m));
  for (const auto& s : f.mount_stats) mount_stats.push_back(stats(s));
  for (const auto& c : f.counters) counter_list.push_back(counters(c));
  for (const auto& i : f.interfaces) interfaces.push_back(interface(i));
  for (const auto& c : f.nfs_connections) connections.push_back(connection(c));
  for (const auto& a : f.addresses) {
    addresses.emplace_back(
        json::object{{"interface", a.interface}, {"address", a.address}, {"prefix_length", a.prefix_length}});
  }
  for (const auto& s : f.nfs_servers) servers.push_back(server(s));
  json::object resolved;
  for (const auto& [name, list] : f.resolved) resolved[name] = json::array(list.begin(), list.end());
  json::object mtu_paths;
  for (const auto& [target, probe] : f.path_mtu) mtu_paths[target] = path_mtu(probe);
  json::value sudo = nullptr;
  if (f.sudo) sudo = json::object{{"usable", f.sudo->usable()}, {"message", f.sudo->message}};
  return json::object{{"host", f.host},
                      {"observed_via", to_string(f.channel)},
                      {"agent_unused", f.agent_unused.empty() ? json::value(nullptr) : json::value(f.agent_unused)},
                      {"boot_id", f.boot_id},
                      {"fstab_sha256", f.fstab_sha256},
                      {"fstab", f.fstab_content},
                      {"mounts", std::move(mounts)},
                      {"mount_stats", std::move(mount_stats)},
                      {"counters", std::move(counter_list)},
                      {"interfaces", std::move(interfaces)},
                      {"nfs_connections", std::move(connections)},
                      {"addresses", std::move(addresses)},
                      {"nfs_servers", std::move(servers)},
                      {"resolved", std::move(resolved)},
                      {"path_mtu", std::move(mtu_paths)},
                      {"sunrpc", sunrpc(f)},
                      {"docker", docker(f.docker)},
                      {"sudo", std::move(sudo)}};
}

}  // namespace pw::guest
