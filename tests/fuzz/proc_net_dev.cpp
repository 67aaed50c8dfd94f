// SPDX-License-Identifier: GPL-3.0-or-later
// /proc/net/dev: the byte counters the verifier subtracts. Accepted text gives named interfaces
// whose counters read back the same when printed in the kernel's layout again.
#include <string>

#include "guest/counters.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

std::string print(const std::vector<guest::InterfaceCounters>& counters) {
  std::string out =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
      "carrier compressed\n";
  for (const auto& c : counters) {
    out += c.name + ": " + std::to_string(c.rx_bytes) + " " + std::to_string(c.rx_packets) + " " +
           std::to_string(c.rx_errors) + " " + std::to_string(c.rx_dropped) + " 0 0 0 0 " + std::to_string(c.tx_bytes) +
           " " + std::to_string(c.tx_packets) + " " + std::to_string(c.tx_errors) + " " + std::to_string(c.tx_dropped) +
           " 0 0 0 0\n";
  }
  return out;
}

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto counters = guest::parse_proc_net_dev(text, "fuzz");
  if (!fuzz::accepted(counters, "fuzz:")) return;
  for (const auto& c : *counters) {
    PW_FUZZ_CHECK(!c.name.empty() && c.name.find_first_of(":|") == std::string::npos, fuzz::printable(c.name));
    PW_FUZZ_CHECK(guest::find_counters(*counters, c.name) != nullptr, fuzz::printable(c.name));
  }
  const auto printed = print(*counters);
  auto again = guest::parse_proc_net_dev(printed, "reprinted");
  PW_FUZZ_CHECK(again.has_value() && *again == *counters, fuzz::printable(printed));
}

}  // namespace

PW_FUZZ_TARGET(one_input)
