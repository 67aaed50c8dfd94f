// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `ethtool -l IF` text (ethtool 6.1 prints nothing for --json -l). virtio fills only Combined;
// veth reports RX/TX.
#include <optional>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct ChannelCounts {
  std::optional<int> rx, tx, other, combined;  // nullopt for "n/a"
  friend bool operator==(const ChannelCounts&, const ChannelCounts&) = default;
};

struct EthtoolChannels {
  std::string interface;
  ChannelCounts maximum;  // "Pre-set maximums"
  ChannelCounts current;  // "Current hardware settings"
};

Result<EthtoolChannels> parse_ethtool_channels(std::string_view text, std::string_view where = "ethtool -l");

// The channels script's exit status when the NIC has no combined channels to set: `ethtool -l`
// says n/a (a veth, an e1000) or fails (a driver without channel parameters), or the guest has no
// ethtool. It changed nothing, so the step is untouched and no rollback of it runs.
inline constexpr int kChannelsUntouchedExit = 97;

// The channels phase's script (POSIX sh): `ethtool -L IF combined N`, the interface and the count
// its first two arguments; the command itself is fixed. It reads `ethtool -l IF` first: a NIC
// without combined channels ends it with kChannelsUntouchedExit. A third argument `restore`
// makes it a rollback's, which also leaves the NIC alone (exit 0) when the current combined count
// already is N (what the rollback used to learn from a whole facts run before it).
std::string_view set_channels_script();

}  // namespace pw::guest
