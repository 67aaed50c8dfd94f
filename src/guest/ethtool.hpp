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

// The channels phase's script (POSIX sh): `ethtool -L IF combined N`, the interface and the count
// its first two arguments; the command itself is fixed. A third argument `restore` makes it a
// rollback's: it reads `ethtool -l IF` first and leaves the NIC alone when the current combined
// count already is N or is n/a, or when the NIC has no channel parameters at all (what the
// rollback used to learn from a whole facts run before it).
std::string_view set_channels_script();

}  // namespace pw::guest
