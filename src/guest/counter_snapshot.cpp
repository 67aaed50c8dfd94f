// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/counter_snapshot.hpp"

namespace pw::guest {
namespace {

const InterfaceInfo* by_ifindex(const std::vector<InterfaceInfo>& interfaces, int ifindex) {
  for (const auto& i : interfaces)
    if (i.ifindex && *i.ifindex == ifindex) return &i;
  return nullptr;
}

}  // namespace

verify::CounterSnapshot counter_snapshot(const std::vector<InterfaceCounters>& counters,
                                         const std::vector<InterfaceInfo>& interfaces,
                                         std::chrono::nanoseconds taken_at,
                                         const std::map<std::string, int, std::less<>>* ifindex_at_read) {
  verify::CounterSnapshot s;
  s.taken_at = taken_at;
  for (const auto& c : counters) {
    if (c.name == "lo") continue;
    verify::InterfaceCounters ic;
    ic.name = c.name;
    ic.rx_bytes = c.rx_bytes;
    ic.tx_bytes = c.tx_bytes;
    const InterfaceInfo* i = nullptr;
    if (ifindex_at_read != nullptr) {
      if (auto it = ifindex_at_read->find(c.name); it != ifindex_at_read->end()) {
        ic.ifindex = it->second;
        i = by_ifindex(interfaces, it->second);
      }
    } else {
      i = find_interface(interfaces, c.name);
    }
    if (i != nullptr) {
      ic.mac = i->identity();
      ic.ifindex = i->ifindex;
      ic.upper_device = i->upper_device();
      if (i->speed_mbps && *i->speed_mbps > 0) ic.speed_mbps = static_cast<std::uint64_t>(*i->speed_mbps);
    }
    s.interfaces.push_back(std::move(ic));
  }
  return s;
}

}  // namespace pw::guest
