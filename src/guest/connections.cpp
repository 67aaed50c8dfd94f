// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/connections.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <span>

#include "guest/tokens.hpp"

namespace pw::guest {

namespace {

struct Endpoint {
  std::string address;
  int port = 0;
};

std::optional<Endpoint> parse_endpoint(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto host = text.substr(0, colon);
  auto port = text.substr(colon + 1);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (auto pct = host.find('%'); pct != std::string_view::npos) host = host.substr(0, pct);
  Endpoint e{std::string(host), 0};
  if (port != "*") {
    auto n = to_int(port);
    if (!n || *n < 0 || *n > 65535) return std::nullopt;
    e.port = *n;
  }
  return e;
}

bool is_number(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// -i items are "key:value", bare flags ("bidir", "cubic"), or "key value" for a few rates.
void add_info(TcpConnection& c, std::span<const std::string_view> tokens) {
  static const std::set<std::string_view> spaced = {"send", "pacing_rate", "delivery_rate"};
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto t = tokens[i];
    if (spaced.contains(t) && i + 1 < tokens.size()) {
      c.info[std::string(t)] = std::string(tokens[++i]);
      continue;
    }
    auto colon = t.find(':');
    if (colon == std::string_view::npos) {
      c.info[std::string(t)] = "";
      continue;
    }
    c.info[std::string(t.substr(0, colon))] = std::string(t.substr(colon + 1));
  }
  auto number = [&](const char* key) -> std::optional<std::uint64_t> {
    auto it = c.info.find(key);
    return it == c.info.end() ? std::nullopt : to_uint64(it->second);
  };
  c.bytes_acked = number("bytes_acked");
  c.bytes_received = number("bytes_received");
  c.bytes_sent = number("bytes_sent");
}

}  // namespace

Result<std::vector<TcpConnection>> parse_ss_tcp(std::string_view text, std::string_view where) {
  std::vector<TcpConnection> out;
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    auto fields = fields_of(line);
    if (fields.empty()) continue;
    bool continuation = line.front() == ' ' || line.front() == '\t';
    if (continuation) {
      if (out.empty())
        return fail("ss info line before any connection", std::string(where) + ":" + std::to_string(line_no));
      add_info(out.back(), fields);
      continue;
    }
    if (fields[0] == "State" || fields[0] == "Recv-Q" || fields[0] == "Netid") continue;  // header
    std::size_t first = is_number(fields[0]) ? 0 : 1;  // no State column when filtered to one state
    if (fields.size() < first + 4 || !is_number(fields[first]) || !is_number(fields[first + 1])) {
      return fail("unexpected ss line '" + std::string(trim(line)) + "'",
                  std::string(where) + ":" + std::to_string(line_no) + ":1",
                  "expected [State] Recv-Q Send-Q Local:Port Peer:Port");
    }
    auto local = parse_endpoint(fields[first + 2]);
    auto peer = parse_endpoint(fields[first + 3]);
    if (!local || !peer) {
      return fail("cannot read the addresses of ss line '" + std::string(trim(line)) + "'",
                  std::string(where) + ":" + std::to_string(line_no));
    }
    TcpConnection c;
    if (first == 1) c.state = std::string(fields[0]);
    c.local_address = local->address;
    c.local_port = local->port;
    c.peer_address = peer->address;
    c.peer_port = peer->port;
    auto rest = std::span(fields).subspan(first + 4);
    if (!rest.empty() && rest.front().starts_with("users:(")) rest = rest.subspan(1);
    add_info(c, rest);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<TcpConnection> connections_to_port(const std::vector<TcpConnection>& all, int port) {
  std::vector<TcpConnection> out;
  for (const auto& c : all) {
    if (c.peer_port == port) out.push_back(c);
  }
  return out;
}

}  // namespace pw::guest
