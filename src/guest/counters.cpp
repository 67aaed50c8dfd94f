// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/counters.hpp"

#include "guest/tokens.hpp"

namespace pw::guest {

Result<std::vector<InterfaceCounters>> parse_proc_net_dev(std::string_view text, std::string_view where) {
  std::vector<InterfaceCounters> out;
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    // Interface names cannot contain ':', so the first one ends the name (older kernels print
    // "eth0:123" without a space).
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // the two header lines have '|' not ':'
    auto name = trim(line.substr(0, colon));
    if (name.empty() || name.find('|') != std::string_view::npos) continue;
    auto fields = fields_of(line.substr(colon + 1));
    const std::string at = std::string(where) + ":" + std::to_string(line_no);
    if (fields.size() < 16) {
      return fail("interface " + std::string(name) + " has " + std::to_string(fields.size()) + " counters, expected 16",
                  at + ":1");
    }
    std::uint64_t v[16];
    for (std::size_t i = 0; i < 16; ++i) {
      auto n = to_uint64(fields[i]);
      if (!n) return fail("counter '" + std::string(fields[i]) + "' is not a number", at);
      v[i] = *n;
    }
    out.push_back(InterfaceCounters{std::string(name), v[0], v[1], v[2], v[3], v[8], v[9], v[10], v[11]});
  }
  return out;
}

const InterfaceCounters* find_counters(const std::vector<InterfaceCounters>& counters, std::string_view name) {
  for (const auto& c : counters) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace pw::guest
