// SPDX-License-Identifier: GPL-3.0-or-later
// `ethtool -l IF`: the queue counts pathwarden compares with the policy and sets with -L.
// Accepted text gives counts that are counts (never negative), and the interface block parser
// that embeds it agrees with it.
#include <string>

#include "guest/ethtool.hpp"
#include "guest/interfaces.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

void check_counts(const guest::ChannelCounts& c, std::string_view text) {
  for (const auto& n : {c.rx, c.tx, c.other, c.combined}) {
    PW_FUZZ_CHECK(!n || *n >= 0, "count " + std::to_string(n.value_or(0)) + " in " + fuzz::printable(text));
  }
}

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto channels = guest::parse_ethtool_channels(text, "fuzz");
  if (fuzz::accepted(channels, "fuzz")) {
    check_counts(channels->maximum, text);
    check_counts(channels->current, text);
  }

  // The same text as the tail of an interface block of the facts report.
  const std::string block =
      "ifindex 3\naddress 52:54:00:AB:cd:01\nspeed -1\noperstate up\nrx_queues 4\ntx_queues 4\n" + std::string(text);
  auto info = guest::parse_interface_report("link1", block, "fuzz");
  if (!fuzz::accepted(info, "fuzz")) return;
  // When the text is all ethtool output, the key lines before it are the only ones read.
  if (text.starts_with("Channel parameters for ")) {
    PW_FUZZ_CHECK(info->mac == "52:54:00:ab:cd:01" && info->ifindex == 3 && !info->speed_mbps && info->rx_queues == 4,
                  fuzz::printable(block));
    std::vector<guest::InterfaceInfo> all{*info};
    PW_FUZZ_CHECK(guest::find_nic_interface(all, "52:54:00:AB:CD:01") != nullptr, "found by MAC");
  }
  PW_FUZZ_CHECK(info->rx_queues >= 0 && info->tx_queues >= 0, fuzz::printable(block));
  if (info->channels) {
    check_counts(info->channels->maximum, text);
    check_counts(info->channels->current, text);
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
