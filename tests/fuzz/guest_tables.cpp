// SPDX-License-Identifier: GPL-3.0-or-later
// The small guest outputs read inside a facts report that had no fuzz target of their own: `ip -j
// addr`'s JSON, one interface's sysfs/ethtool block, `getent ahosts`, and `docker volume
// inspect`'s JSON. The input's first byte picks the reader, the rest is the guest's text. No
// crash, and what is accepted holds only what the text said.
#include <string>

#include "guest/addresses.hpp"
#include "guest/docker_volumes.hpp"
#include "guest/facts.hpp"
#include "guest/interfaces.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const auto which = data[0] % 4;
  fuzz::Pieces in(data + 1, size - 1);
  const auto text = in.rest();
  switch (which) {
    case 0: {
      auto addrs = guest::parse_ip_addr(text, "guest-1");
      if (!fuzz::accepted(addrs, "guest-1")) return;
      for (const auto& a : *addrs) {
        PW_FUZZ_CHECK(!a.interface.empty() && text.find(a.interface) != std::string_view::npos,
                      fuzz::printable(a.interface));
        PW_FUZZ_CHECK(a.prefix_length >= 0 && a.prefix_length <= 128, std::to_string(a.prefix_length));
      }
      break;
    }
    case 1: {
      auto info = guest::parse_interface_report("eth0", text, "guest-1");
      if (!fuzz::accepted(info, "guest-1")) return;
      PW_FUZZ_CHECK(info->name == "eth0", fuzz::printable(info->name));
      PW_FUZZ_CHECK(info->rx_queues >= 0 && info->tx_queues >= 0, "negative queue count");
      PW_FUZZ_CHECK(!info->ifindex || *info->ifindex >= 0, "negative ifindex");
      break;
    }
    case 2: {
      for (const auto& a : guest::parse_getent_ahosts(text)) {
        PW_FUZZ_CHECK(!a.empty() && text.find(a) != std::string_view::npos, fuzz::printable(a));
      }
      break;
    }
    default: {
      auto volumes = guest::parse_docker_volume_inspect(text, "guest-1");
      if (!fuzz::accepted(volumes, "guest-1")) return;
      for (const auto& v : *volumes) PW_FUZZ_CHECK(!v.name.empty(), "a volume without a name");
      break;
    }
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
