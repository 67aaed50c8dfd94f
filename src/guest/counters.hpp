// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Interface byte counters from /proc/net/dev (the same 64-bit counters sysfs statistics show).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct InterfaceCounters {
  std::string name;
  std::uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  std::uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
  friend bool operator==(const InterfaceCounters&, const InterfaceCounters&) = default;
};

Result<std::vector<InterfaceCounters>> parse_proc_net_dev(std::string_view text,
                                                          std::string_view where = "/proc/net/dev");

const InterfaceCounters* find_counters(const std::vector<InterfaceCounters>& counters, std::string_view name);

}  // namespace pw::guest
