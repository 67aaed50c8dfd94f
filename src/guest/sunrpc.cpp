// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/sunrpc.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "guest/tokens.hpp"

namespace pw::guest {

std::string SunrpcTransport::proto() const {
  const auto dash = name.rfind('-');
  return dash == std::string::npos ? std::string() : name.substr(dash + 1);
}

Result<SunrpcReport> parse_sunrpc_section(std::string_view text, std::string_view where) {
  SunrpcReport out;
  out.support = TransportMoveSupport::present;
  std::size_t start = 0;
  int line_no = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const auto line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const auto fields = fields_of(line);
    if (fields.empty()) continue;
    if (fields.size() == 1 && fields[0] == "absent") {
      out.support = TransportMoveSupport::absent;
      continue;
    }
    if (fields.size() != 5 || !fields[0].starts_with("switch-") || !fields[1].starts_with("xprt-")) {
      return fail("unexpected sunrpc transport line '" + std::string(line) + "'",
                  std::string(where) + ":" + std::to_string(line_no), "expected SWITCH XPRT DSTADDR MAIN DSTPORT");
    }
    SunrpcTransport t;
    t.switch_name = fields[0];
    t.name = fields[1];
    if (fields[2] != "-") t.dstaddr = fields[2];
    if (fields[3] == "0" || fields[3] == "1") t.main = fields[3] == "1";
    int port = 0;
    if (auto [p, ec] = std::from_chars(fields[4].data(), fields[4].data() + fields[4].size(), port);
        ec == std::errc() && p == fields[4].data() + fields[4].size()) {
      t.dst_port = port;
    }
    out.transports.push_back(std::move(t));
  }
  return out;
}

std::vector<const SunrpcTransport*> client_transports(const std::vector<SunrpcTransport>& all,
                                                      std::string_view address) {
  std::set<std::string> switches;
  for (const auto& t : all) {
    if (t.main == true && t.dst_port == 2049 && t.dstaddr == address) switches.insert(t.switch_name);
  }
  std::vector<const SunrpcTransport*> out;
  if (switches.size() != 1) return out;
  for (const auto& t : all) {
    if (t.switch_name == *switches.begin() && t.dst_port == 2049) out.push_back(&t);
  }
  return out;
}

}  // namespace pw::guest
