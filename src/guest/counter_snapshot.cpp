#include "guest/counter_snapshot.hpp"

namespace pw::guest {

verify::CounterSnapshot counter_snapshot(const std::vector<InterfaceCounters>& counters,
                                         const std::vector<InterfaceInfo>& interfaces,
                                         std::chrono::nanoseconds taken_at) {
  verify::CounterSnapshot s;
  s.taken_at = taken_at;
  for (const auto& c : counters) {
    if (c.name == "lo") continue;
    verify::InterfaceCounters ic;
    ic.name = c.name;
    ic.rx_bytes = c.rx_bytes;
    ic.tx_bytes = c.tx_bytes;
    if (const auto* i = find_interface(interfaces, c.name)) {
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
