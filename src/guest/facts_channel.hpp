// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How a guest's facts were read: over SSH by an Ansible play, or through the QEMU guest agent by
// way of the Proxmox API (src/observe). The same script and parser either way. Its own header:
// the report names it without the rest of the guest's facts.
#include <cstdint>
#include <optional>
#include <string_view>

namespace pw::guest {

enum class FactsChannel : std::uint8_t { ansible, agent };

inline std::string_view to_string(FactsChannel channel) {
  return channel == FactsChannel::agent ? "agent" : "ansible";
}

inline std::optional<FactsChannel> facts_channel_from(std::string_view text) {
  if (text == "agent") return FactsChannel::agent;
  if (text == "ansible") return FactsChannel::ansible;
  return std::nullopt;
}

}  // namespace pw::guest
