// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/ethtool.hpp"

#include <string>

#include "guest/scripts.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {

Result<EthtoolChannels> parse_ethtool_channels(std::string_view text, std::string_view where) {
  EthtoolChannels out;
  ChannelCounts* section = nullptr;
  bool seen_any = false;
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    auto t = trim(line);
    if (t.empty()) continue;
    constexpr std::string_view header = "Channel parameters for ";
    if (t.starts_with(header)) {
      auto name = t.substr(header.size());
      if (name.ends_with(':')) name.remove_suffix(1);
      out.interface = std::string(name);
      continue;
    }
    if (t.starts_with("Pre-set maximums")) {
      section = &out.maximum;
      continue;
    }
    if (t.starts_with("Current hardware settings")) {
      section = &out.current;
      continue;
    }
    auto colon = t.find(':');
    if (colon == std::string_view::npos || section == nullptr) continue;
    auto key = t.substr(0, colon);
    auto value = trim(t.substr(colon + 1));
    std::optional<int> number;
    if (value != "n/a") {
      number = to_int(value);
      if (!number || *number < 0) {
        return fail("channel count '" + std::string(value) + "' is neither a count nor n/a",
                    std::string(where) + ":" + std::to_string(line_no));
      }
    }
    if (key == "RX")
      section->rx = number;
    else if (key == "TX")
      section->tx = number;
    else if (key == "Other")
      section->other = number;
    else if (key == "Combined")
      section->combined = number;
    else
      continue;
    seen_any = true;
  }
  if (!seen_any) return fail("no channel parameters in ethtool output", std::string(where));
  return out;
}

std::string_view set_channels_script() {
  // POSIX sh only (parameter expansion and `case`, no awk or sed; run by dash in
  // tests/guest/channels_script_test.cpp). Its untouched exit is kChannelsUntouchedExit
  // (checked there against the script's own `untouched=`).
  static const std::string text = "set -u\n" + std::string(scripts::channels);
  return text;
}

}  // namespace pw::guest
