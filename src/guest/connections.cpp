// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/connections.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
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

namespace {

std::optional<std::uint32_t> hex32(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : text) {
    const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                  : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                                                              : -1;
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<std::uint32_t>(d);
  }
  return v;
}

// "0F02000A:0801" -> 10.0.2.15, 2049; IPv6: four such words, then the port.
std::optional<Endpoint> proc_endpoint(std::string_view text, bool ipv6) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto addr = text.substr(0, colon);
  const auto port = text.substr(colon + 1);
  if (port.empty() || port.size() > 4) return std::nullopt;
  int p = 0;
  for (char c : port) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    p = p * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::toupper(c) - 'A' + 10));
  }
  std::array<unsigned char, 16> bytes{};
  const std::size_t words = ipv6 ? 4 : 1;
  if (addr.size() != words * 8) return std::nullopt;
  for (std::size_t w = 0; w < words; ++w) {
    auto v = hex32(addr.substr(w * 8, 8));
    if (!v) return std::nullopt;
    for (std::size_t b = 0; b < 4; ++b) bytes[w * 4 + b] = static_cast<unsigned char>((*v >> (8 * b)) & 0xFF);
  }
  std::array<char, INET6_ADDRSTRLEN> out{};
  if (inet_ntop(ipv6 ? AF_INET6 : AF_INET, bytes.data(), out.data(), out.size()) == nullptr) return std::nullopt;
  return Endpoint{out.data(), p};
}

}  // namespace

Result<std::vector<TcpConnection>> parse_proc_net_tcp(std::string_view text, bool ipv6, std::string_view where) {
  // The kernel's TCP_ESTABLISHED (include/net/tcp_states.h), as /proc/net/tcp's "st" column prints it.
  constexpr std::string_view kEstablished = "01";
  std::vector<TcpConnection> out;
  const auto lines = lines_of(text);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const auto f = fields_of(lines[n]);
    if (f.empty() || (n == 0 && f[0] == "sl")) continue;  // the header
    auto bad = [&] {
      return fail("line " + std::to_string(n + 1) + " is not a /proc/net/tcp entry", std::string(where));
    };
    if (f.size() < 4) return bad();
    auto local = proc_endpoint(f[1], ipv6);
    auto peer = proc_endpoint(f[2], ipv6);
    if (!local || !peer) return bad();
    if (f[3] != kEstablished) continue;
    TcpConnection c;  // state "": established only, as the facts script's filtered ss gives them
    c.local_address = local->address;
    c.local_port = local->port;
    c.peer_address = peer->address;
    c.peer_port = peer->port;
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
