// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/agent_json.hpp"

#include <boost/json.hpp>
#include <cstdint>

#include "proxmox/api_json.hpp"

namespace pw::proxmox::agent {
namespace {

namespace bj = boost::json;

std::unexpected<Problem> malformed(std::string what) {
  return std::unexpected<Problem>(Problem{Outcome::malformed, std::move(what), {}});
}

// The `data` member of an answer, which must be an object.
std::expected<const bj::object*, Problem> data_object(std::string_view body, const bj::value& root) {
  const auto* top = root.if_object();
  const auto* data = top != nullptr ? top->if_contains("data") : nullptr;
  if (data == nullptr || !data->is_object()) {
    return malformed("the agent's answer has no data object: " + std::string(body.substr(0, 200)));
  }
  return &data->as_object();
}

std::optional<bj::value> parse(std::string_view body) {
  boost::system::error_code ec;
  auto v = bj::parse(body, ec);
  if (ec) return std::nullopt;
  return v;
}

// A count or flag as the agent endpoints send it: an integer, or (generic endpoints, which pass
// QGA's JSON through) a boolean.
std::optional<std::int64_t> integer(const bj::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(v->as_uint64());
  }
  if (v->is_bool()) return v->as_bool() ? 1 : 0;
  return std::nullopt;
}

std::optional<std::uint64_t> counter(const bj::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
  return std::nullopt;
}

std::string text(const bj::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// What a QGA error says, as an outcome: an unknown command and a frozen agent share the class
// CommandNotFound (QGA qapi/qmp-dispatch.c); the description tells them apart.
Problem agent_said(std::string_view klass, std::string desc) {
  if (desc.find("has been disabled") != std::string::npos && desc.find("frozen") != std::string::npos) {
    return {Outcome::frozen, std::move(desc), {}};
  }
  if (klass == "CommandNotFound" || desc.find("has not been found") != std::string::npos) {
    return {Outcome::command_missing, std::move(desc), {}};
  }
  return {Outcome::agent_error, std::move(desc), {}};
}

// The generic endpoints answer {"result": <QGA return>} with status 200, also when QGA returned an
// error: then the result is {"error": {"class", "desc"}} (qemu-server register_command).
std::expected<const bj::value*, Problem> generic_result(std::string_view body, const bj::value& root) {
  auto data = data_object(body, root);
  if (!data) return std::unexpected(data.error());
  const auto* result = (*data)->if_contains("result");
  if (result == nullptr) return malformed("the agent's answer has no result");
  if (const auto* o = result->if_object()) {
    if (const auto* e = o->if_contains("error"); e != nullptr && e->is_object()) {
      return std::unexpected(agent_said(text(e->as_object(), "class"), text(e->as_object(), "desc")));
    }
  }
  return result;
}

// The guest's bytes back from the JSON string qemu-server sends them in. qemu-server decodes QGA's
// base64 into a Perl byte string (PVE/API2/Qemu/Agent.pm exec-status: decode_base64 of out-data;
// file-read: of each chunk's buf-b64) and pve-http-server's formatter encodes the answer with
// to_json(..., utf8 => 1), which takes each byte for the character of that number: a UTF-8 "é"
// in the guest (C3 A9) arrives as "Ã©" (C3 83 C2 A9). Every character is then at most U+00FF and
// stands for one byte. A character above U+00FF cannot come from that path; such a text is kept
// as it is. Exact bytes matter: the fstab's sha256 is the token of its compare-and-swap write.
std::string guest_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < text.size() &&
               (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F)));
      ++i;
    } else {
      return std::string(text);  // not what to_json makes of bytes: keep it
    }
  }
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::not_configured:
      return "not-configured";
    case Outcome::not_running:
      return "not-running";
    case Outcome::vm_not_running:
      return "vm-not-running";
    case Outcome::command_missing:
      return "command-missing";
    case Outcome::frozen:
      return "frozen";
    case Outcome::timeout:
      return "timeout";
    case Outcome::agent_error:
      return "agent-error";
    case Outcome::permission:
      return "permission";
    case Outcome::api:
      return "api";
    case Outcome::malformed:
      return "malformed";
  }
  return "api";
}

// The texts are qemu-server's die messages (PVE/QemuServer/Agent.pm assert_agent_available,
// check_agent_error; PVE/QMPClient.pm "got timeout"), which Proxmox sends as the status line's
// reason and the body's message (pve-http-server AnyEvent.pm response); 596 is pveproxy's idle
// timeout towards pvedaemon (AnyEvent::HTTP), for a call silent longer than 30 s.
Problem classify(const ApiError& error) {
  const std::string said = error.message.empty() ? error.reason : error.message;
  if (error.kind == ApiErrorKind::permission) return {Outcome::permission, said, error.missing_privilege};
  // "can't lock file ... got timeout" is a config lock, not the agent (agent calls take none).
  if (error.kind == ApiErrorKind::busy || error.kind == ApiErrorKind::locked)
    return {Outcome::api, error.to_string(), {}};
  if (error.http_status == 596 || error.kind == ApiErrorKind::timeout || contains(said, "got timeout")) {
    return {Outcome::timeout, said, {}};
  }
  if (contains(said, "No QEMU guest agent configured")) return {Outcome::not_configured, said, {}};
  if (contains(said, "QEMU guest agent is not running")) return {Outcome::not_running, said, {}};
  if (said.starts_with("VM ") && contains(said, " is not running")) return {Outcome::vm_not_running, said, {}};
  constexpr std::string_view kAgentError = "Agent error: ";  // qemu-server check_agent_error
  if (auto at = said.find(kAgentError); at != std::string::npos) {
    auto p = agent_said({}, said.substr(at + kAgentError.size()));
    p.message = said;
    return p;
  }
  return {Outcome::api, error.to_string(), {}};
}

std::string endpoint(const VmRef& vm, std::string_view command) {
  return "/nodes/" + json::percent_encode(vm.node) + "/qemu/" + std::to_string(vm.vmid) + "/agent/" +
         std::string(command);
}

std::expected<std::vector<Interface>, Problem> parse_interfaces(std::string_view body) {
  auto root = parse(body);
  if (!root) return malformed("the agent's answer is no JSON");
  auto result = generic_result(body, *root);
  if (!result) return std::unexpected(result.error());
  const auto* list = (*result)->if_array();
  if (list == nullptr) return malformed("network-get-interfaces: the result is no list");
  std::vector<Interface> out;
  for (const auto& entry : *list) {
    const auto* o = entry.if_object();
    if (o == nullptr || text(*o, "name").empty()) return malformed("network-get-interfaces: an entry without a name");
    Interface i;
    i.name = text(*o, "name");
    i.mac = text(*o, "hardware-address");
    if (const auto* ips = o->if_contains("ip-addresses"); ips != nullptr && ips->is_array()) {
      for (const auto& ip : ips->as_array()) {
        if (!ip.is_object()) continue;
        const auto& a = ip.as_object();
        i.addresses.push_back({text(a, "ip-address"), text(a, "ip-address-type") == "ipv6",
                               static_cast<int>(integer(a, "prefix").value_or(0))});
      }
    }
    if (const auto* stats = o->if_contains("statistics"); stats != nullptr && stats->is_object()) {
      i.rx_bytes = counter(stats->as_object(), "rx-bytes");
      i.tx_bytes = counter(stats->as_object(), "tx-bytes");
    }
    out.push_back(std::move(i));
  }
  return out;
}

std::expected<FileRead, Problem> parse_file_read(std::string_view body) {
  auto root = parse(body);
  if (!root) return malformed("the agent's answer is no JSON");
  auto data = data_object(body, *root);
  if (!data) return std::unexpected(data.error());
  const auto* content = (*data)->if_contains("content");
  const auto bytes = integer(**data, "bytes-read");
  if (content == nullptr || !content->is_string() || !bytes || *bytes < 0) {
    return malformed("file-read: no content and bytes-read");
  }
  return FileRead{guest_bytes(content->as_string()), static_cast<std::uint64_t>(*bytes),
                  integer(**data, "truncated").value_or(0) != 0};
}

std::expected<long, Problem> parse_exec(std::string_view body) {
  auto root = parse(body);
  if (!root) return malformed("the agent's answer is no JSON");
  auto data = data_object(body, *root);
  if (!data) return std::unexpected(data.error());
  const auto pid = integer(**data, "pid");
  if (!pid || *pid <= 0) return malformed("exec: no pid");
  return static_cast<long>(*pid);
}

std::expected<ExecStatus, Problem> parse_exec_status(std::string_view body) {
  auto root = parse(body);
  if (!root) return malformed("the agent's answer is no JSON");
  auto data = data_object(body, *root);
  if (!data) return std::unexpected(data.error());
  const auto& d = **data;
  const auto exited = integer(d, "exited");
  if (!exited) return malformed("exec-status: no exited");
  ExecStatus s;
  s.exited = *exited != 0;
  if (auto code = integer(d, "exitcode")) s.exit_code = static_cast<int>(*code);
  if (auto sig = integer(d, "signal")) s.signal = static_cast<int>(*sig);
  s.out = guest_bytes(text(d, "out-data"));
  s.err = guest_bytes(text(d, "err-data"));
  s.out_truncated = integer(d, "out-truncated").value_or(0) != 0;
  s.err_truncated = integer(d, "err-truncated").value_or(0) != 0;
  return s;
}

}  // namespace pw::proxmox::agent
