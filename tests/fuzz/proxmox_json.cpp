// SPDX-License-Identifier: GPL-3.0-or-later
// Answers of the Proxmox API (or of whatever answers at its address): every decoder refuses
// what is not the shape it expects with a message, and what it accepts is well-formed: VM ids
// that are VM ids, digests present, task ids that parse again, NIC values that the netN codec
// either refuses or round-trips. Error answers become typed errors whose message is one line.
#include <boost/json.hpp>
#include <string>

#include "invariant.hpp"
#include "proxmox/api_error.hpp"
#include "proxmox/api_json.hpp"
#include "proxmox/net_device.hpp"

namespace {

using namespace pw;
namespace pj = proxmox::json;

bool one_line(std::string_view s) {
  return s.find_first_of("\r\n") == std::string_view::npos;
}

// The integer members `key` of the objects in the body's data list that pass `keep`, in order:
// what a decoder must have read, not a truncated version of it.
template <class Keep>
std::vector<std::optional<std::int64_t>> integers_in_data(std::string_view body, std::string_view key, Keep keep) {
  std::vector<std::optional<std::int64_t>> out;
  boost::system::error_code ec;
  const auto v = boost::json::parse(body, ec);
  if (ec || !v.is_object() || !v.get_object().contains("data") || !v.get_object().at("data").is_array()) return out;
  for (const auto& item : v.get_object().at("data").get_array()) {
    if (!item.is_object() || !keep(item.get_object())) continue;
    const auto* m = item.get_object().if_contains(key);
    out.push_back(m != nullptr && m->is_int64() ? std::optional(m->get_int64()) : std::nullopt);
  }
  return out;
}

bool has_string(const boost::json::object& o, std::string_view key, std::initializer_list<std::string_view> values) {
  const auto* m = o.if_contains(key);
  if (m == nullptr || !m->is_string()) return false;
  for (auto v : values) {
    if (m->get_string() == v) return true;
  }
  return false;
}

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const proxmox::VmRef ref{"pve1", 101};

  if (auto v = pj::parse_version(body); fuzz::accepted(v)) (void)v->size();

  if (auto guests = pj::parse_guests(body); fuzz::accepted(guests)) {
    const auto vmids = integers_in_data(body, "vmid", [](const auto& o) {
      return has_string(o, "type", {"qemu", "lxc"});
    });
    for (std::size_t i = 0; i < guests->size(); ++i) {
      const auto& g = (*guests)[i];
      PW_FUZZ_CHECK(g.ref.vmid >= 1,
                    "guest with vmid " + std::to_string(g.ref.vmid) + " from " + fuzz::printable(body));
      if (i < vmids.size() && vmids[i]) {
        PW_FUZZ_CHECK(*vmids[i] == g.ref.vmid,
                      "vmid " + std::to_string(*vmids[i]) + " read as " + std::to_string(g.ref.vmid));
      }
    }
  }
  if (auto nodes = pj::parse_nodes(body); fuzz::accepted(nodes)) (void)nodes->size();

  for (bool current : {true, false}) {
    auto cfg = pj::parse_config(body, ref, current);
    if (!fuzz::accepted(cfg)) continue;
    PW_FUZZ_CHECK(!cfg->digest.empty() && cfg->ref == ref && cfg->current == current, "config");
    for (const auto& [k, v] : cfg->entries) PW_FUZZ_CHECK(k != "digest" && cfg->get(k).has_value(), k);
    for (const auto& [key, value] : cfg->nics()) {
      PW_FUZZ_CHECK(proxmox::is_net_key(key), key);
      auto nic = proxmox::NetDeviceSpec::parse(value);
      if (!fuzz::accepted(nic)) continue;
      auto again = proxmox::NetDeviceSpec::parse(nic->to_string());
      PW_FUZZ_CHECK(again && *again == *nic, "netN round trip of " + fuzz::printable(value));
    }
  }

  if (auto pending = pj::parse_pending(body, ref); fuzz::accepted(pending)) {
    for (const auto& item : pending->items) {
      PW_FUZZ_CHECK(item.key != "digest", "digest as an item");
      PW_FUZZ_CHECK(item.delete_ >= 0 && item.delete_ <= 2, "delete flag " + std::to_string(item.delete_));
      PW_FUZZ_CHECK(pending->find(item.key) != nullptr, item.key);
    }
    for (const auto& key : pending->changed_keys()) PW_FUZZ_CHECK(pending->find(key)->has_change(), key);
    // A pending delete in the answer is a pending change, whatever number marks it.
    const auto deletes = integers_in_data(body, "delete", [](const auto& o) {
      const auto* k = o.if_contains("key");
      return k != nullptr && !k->is_null() && !has_string(o, "key", {"digest"});
    });
    if (deletes.size() == pending->items.size()) {
      for (std::size_t i = 0; i < deletes.size(); ++i) {
        if (deletes[i] && *deletes[i] != 0) PW_FUZZ_CHECK(pending->items[i].has_change(), pending->items[i].key);
      }
    }
  }

  if (auto status = pj::parse_vm_status(body, ref); fuzz::accepted(status)) {
    PW_FUZZ_CHECK(!status->status.empty(), "status");
    // Every member of "nics" is either taken as a tap of this VM or set aside, never lost.
    boost::system::error_code ec;
    const auto v = boost::json::parse(body, ec);
    const auto* nics = ec ? nullptr : v.at("data").as_object().if_contains("nics");
    if (nics != nullptr && nics->is_object()) {
      PW_FUZZ_CHECK(status->nics.size() + status->ignored_nics.size() == nics->as_object().size(),
                    "nics members taken or set aside");
    }
    for (const auto& [index, counters] : status->nics) PW_FUZZ_CHECK(index >= 0, "tap index");
  }

  if (auto upid = pj::parse_optional_upid(body); fuzz::accepted(upid) && upid->has_value()) {
    auto again = proxmox::Upid::parse((*upid)->text);
    PW_FUZZ_CHECK(again && again->text == (*upid)->text && again->node == (*upid)->node, (*upid)->text);
  }

  if (auto task = pj::parse_task_status(body); fuzz::accepted(task)) {
    PW_FUZZ_CHECK(!task->upid.node.empty() && !task->upid.type.empty(), task->upid.text);
    PW_FUZZ_CHECK(!task->succeeded() || !task->running, "a running task cannot have succeeded");
    PW_FUZZ_CHECK(task->warnings() >= 0, "warnings " + std::to_string(task->warnings()));
  }

  if (auto ticket = pj::parse_ticket(body); fuzz::accepted(ticket)) {
    PW_FUZZ_CHECK(!ticket->ticket.empty() && !ticket->csrf_token.empty(), "ticket");
  }

  // The same bytes as the body of an error answer, with the reason phrase Proxmox would send.
  const auto reason = body.substr(0, body.find('\n'));
  for (int status : {400, 401, 403, 404, 500, 501, 596}) {
    const auto e = proxmox::error_from_response(status, reason, body, "GET https://pve1:8006/api2/json/x");
    const auto shown = e.to_string();
    PW_FUZZ_CHECK(!e.message.empty() && e.http_status == status, shown);
    PW_FUZZ_CHECK(one_line(e.message) && one_line(e.hint), "multi-line message: " + fuzz::printable(shown));
    for (const auto& [field, msg] : e.field_errors) PW_FUZZ_CHECK(one_line(msg), fuzz::printable(msg));
    if (status == 401) PW_FUZZ_CHECK(e.kind == proxmox::ApiErrorKind::auth, shown);
    if (status == 403) PW_FUZZ_CHECK(e.kind == proxmox::ApiErrorKind::permission, shown);
    if (status == 400) PW_FUZZ_CHECK(e.kind == proxmox::ApiErrorKind::parameter, shown);
    (void)proxmox::is_retryable_read_error(e);
  }

  const auto encoded = pj::percent_encode(body);
  PW_FUZZ_CHECK(encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~%") ==
                    std::string::npos,
                fuzz::printable(encoded));
}

}  // namespace

PW_FUZZ_TARGET(one_input)
