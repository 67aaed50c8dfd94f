// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/addresses.hpp"

#include <boost/json.hpp>

namespace pw::guest {
namespace {

namespace json = boost::json;

std::string_view string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

}  // namespace

Result<std::vector<InterfaceAddress>> parse_ip_addr(std::string_view text, std::string_view where) {
  const std::string w(where);
  const std::string hint = "expected the output of `ip -j addr show`";
  boost::system::error_code ec;
  const auto doc = json::parse(text, ec);
  if (ec) return fail("not JSON: " + ec.message(), w, hint);
  const auto* list = doc.if_array();
  if (list == nullptr) return fail("not a JSON array of interfaces", w, hint);
  std::vector<InterfaceAddress> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const auto* link = (*list)[i].if_object();
    const std::string at = "interface #" + std::to_string(i + 1);
    if (link == nullptr) return fail(at + " is not an object", w, hint);
    if (link->empty()) continue;
    const auto name = string_at(*link, "ifname");
    if (name.empty()) return fail(at + " has no \"ifname\"", w, hint);
    const auto* infos = link->if_contains("addr_info");
    if (infos == nullptr) continue;
    if (!infos->is_array()) return fail(std::string(name) + ": \"addr_info\" is not a list", w, hint);
    for (const auto& info : infos->get_array()) {
      const auto* a = info.if_object();
      if (a == nullptr) return fail(std::string(name) + ": an \"addr_info\" entry is not an object", w, hint);
      const auto family = string_at(*a, "family");
      if (family != "inet" && family != "inet6") continue;
      const auto local = string_at(*a, "local");
      const auto* prefix = a->if_contains("prefixlen");
      const int bits = family == "inet" ? 32 : 128;
      if (local.empty() || prefix == nullptr || !prefix->is_int64() || prefix->get_int64() < 0 ||
          prefix->get_int64() > bits) {
        return fail(std::string(name) + ": an " + std::string(family) + " address without a \"local\" address or a " +
                        "\"prefixlen\" from 0 to " + std::to_string(bits),
                    w, hint);
      }
      out.push_back({std::string(name), std::string(local), static_cast<int>(prefix->get_int64())});
    }
  }
  return out;
}

}  // namespace pw::guest
