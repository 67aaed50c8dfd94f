// SPDX-License-Identifier: GPL-3.0-or-later
#include "agent.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <iostream>
#include <optional>
#include <sstream>

#include "base64.hpp"
#include "qga_socket.hpp"

namespace pvesim {

namespace bj = boost::json;

namespace {

// A die inside the handler: the call answers 500 with this text.
struct AgentDie {
  std::string message;
};

// $MAX_READ_SIZE (QS9 PVE/API2/Qemu/Agent.pm l. 20) and file-read's $read_size (l. 536).
constexpr long long kMaxReadSize = 16LL << 20;
constexpr long long kReadChunk = 1LL << 20;

// The PVE 9 privileges (pve-access-control 922f710, AC9 PVE/AccessControl.pm $privgroups; QS9
// PVE/API2/Qemu/Agent.pm $guest_agent_commands, register_command l. 170: `[$perm,
// 'VM.GuestAgent.Unrestricted'], any => 1`; exec and exec-status Unrestricted alone).
const std::vector<AgentEndpoint>& agent_endpoints() {
  using T = AgentParam::Type;
  static const std::string audit = "VM.GuestAgent.Audit", file_read = "VM.GuestAgent.FileRead",
                           unrestricted = "VM.GuestAgent.Unrestricted";
  static const std::vector<AgentEndpoint> list = {
      {"POST", "ping", AgentCall::generic, {audit, unrestricted}, {}},
      {"GET", "info", AgentCall::generic, {audit, unrestricted}, {}},
      {"GET", "get-osinfo", AgentCall::generic, {audit, unrestricted}, {}},
      {"GET", "network-get-interfaces", AgentCall::generic, {audit, unrestricted}, {}},
      // exec (l. 313): `command` an array (a repeated form field), `input-data` up to 64 KiB.
      {"POST",
       "exec",
       AgentCall::exec,
       {unrestricted},
       {{"command", T::list, true}, {"input-data", T::string, false, LLONG_MIN, LLONG_MAX, std::size_t{64} * 1024}}},
      {"GET", "exec-status", AgentCall::exec_status, {unrestricted}, {{"pid", T::integer, true}}},
      // file-read (l. 445): `count`, `offset` and `decode` since qemu-server 9.1.5.
      {"GET",
       "file-read",
       AgentCall::file_read,
       {file_read, unrestricted},
       {{"file", T::string, true},
        {"count", T::integer, false, 1, kMaxReadSize},
        {"offset", T::integer, false, 0},
        {"decode", T::boolean}}},
  };
  return list;
}

// qemu-server decodes QGA's base64 into Perl byte strings; pvedaemon's JSON formatter (pve-http-
// server PVE/APIServer/Formatter/Standard.pm, to_json with utf8 => 1) then writes each byte as one
// character, so text that is not ASCII arrives double-encoded: "é" (bytes C3 A9) as "Ã©". A
// client gets the guest's bytes back by taking each character as one Latin-1 byte.
std::string perl_bytes_as_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      out += ch;
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// Perl truth of a decoded JSON value (JSON::true/false, "", "0", 0, undef).
bool perl_true(const bj::value* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_bool()) return v->as_bool();
  if (v->is_number()) return v->to_number<double>() != 0;
  if (v->is_string()) return !v->as_string().empty() && v->as_string() != "0";
  return true;
}

// check_agent_error (QS9 PVE/QemuServer/Agent.pm l. 91): a QGA error reply, or no result at all,
// dies "Agent error: ..."; with `noerr` it is only warned (pvedaemon's log: pvesim's stderr).
bool check_agent_error(const bj::value& result, const std::string& errmsg, bool noerr = false) {
  std::string error;
  const bj::object* o = result.if_object();
  const bj::value* e = o != nullptr ? o->if_contains("error") : nullptr;
  const bj::value* desc = e != nullptr && e->is_object() ? e->as_object().if_contains("desc") : nullptr;
  if (perl_true(e) && perl_true(desc) && desc->is_string()) {
    error = "Agent error: " + std::string(desc->as_string());
  } else if (result.is_null()) {
    error = "Agent error: " + errmsg;
  }
  if (error.empty()) return true;
  if (!noerr) throw AgentDie{error};
  std::cerr << "pvesim: " << error << "\n";
  return false;
}

// The VM's agent as one call's handler talks to it.
class AgentConversation {
 public:
  AgentConversation(QgaPeer& peer, int vmid, const AgentOptions& options)
      : peer_(peer), vmid_(std::to_string(vmid)), options_(options) {}

  // mon_cmd → qmp_cmd (QS9 PVE/QemuServer/Monitor.pm l. 125, 67) → PVE::QMPClient::cmd: no socket
  // is "unable to open monitor socket"; a failed conversation dies with the peer's name, the
  // command and why ("VM 101 qga command 'guest-exec' failed - got timeout", cmd l. 175).
  bj::value mon_cmd(const std::string& command, const bj::object& arguments,
                    std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    if (!peer_.reachable()) throw AgentDie{"unable to open monitor socket"};
    QgaResult r = peer_.execute(command, arguments, timeout.value_or(options_.command_timeout));
    if (!r.failure.empty()) throw AgentDie{"VM " + vmid_ + " qga command '" + command + "' failed - " + r.failure};
    return std::move(r.value);
  }

  // qga_check_running (l. 82): guest-ping within 3 s; whatever fails, the agent is not running.
  // A QGA error reply is an answer, so it counts as running.
  bool check_running() {
    try {
      mon_cmd("guest-ping", {}, options_.ping_timeout);
      return true;
    } catch (const AgentDie&) {
      return false;
    }
  }

  // mon_cmd then check_agent_error, as agent_cmd (l. 116) does after its assert_agent_available.
  bj::value checked(const std::string& command, const bj::object& arguments, const std::string& errmsg) {
    bj::value r = mon_cmd(command, arguments);
    check_agent_error(r, errmsg);
    return r;
  }

 private:
  QgaPeer& peer_;
  std::string vmid_;
  const AgentOptions& options_;
};

const std::string* agent_param(const AgentParams& params, const std::string& name) {
  auto it = params.find(name);
  return it == params.end() || it->second.empty() ? nullptr : &it->second.back();
}

// qemu_exec (QS9 PVE/QemuServer/Agent.pm l. 125): guest-exec with the command split into path and
// arg, capture-output always, input-data base64-encoded; QGA's {"pid": N} is the answer as is.
bj::value agent_exec(AgentConversation& agent, const AgentParams& params) {
  const auto it = params.find("command");
  if (it == params.end() || it->second.empty()) throw AgentDie{"command or input-data (or both) required"};
  const std::vector<std::string>& command = it->second;
  bj::array arg;
  for (std::size_t i = 1; i < command.size(); ++i) arg.emplace_back(command[i]);
  bj::object args{{"path", command.front()}, {"arg", arg}, {"capture-output", true}};
  // Upstream interpolates the arg array reference here ("ARRAY(0x...)"); pvesim lists it.
  std::string errmsg = "can't execute command (" + command.front();
  for (const auto& a : arg) errmsg += " " + std::string(a.as_string());
  errmsg += ")";
  if (const std::string* input = agent_param(params, "input-data")) {
    args["input-data"] = base64_encode(*input);
    errmsg += " (input-data given)";
  }
  return agent.checked("guest-exec", args, errmsg);
}

// qemu_exec_status (l. 153): out-data and err-data decoded from base64 when not empty, every JSON
// boolean turned into 1 or 0 (exited, out-truncated, err-truncated).
bj::value agent_exec_status(AgentConversation& agent, const AgentParams& params) {
  const long long pid = std::stoll(*agent_param(params, "pid"));
  bj::value res = agent.checked("guest-exec-status", bj::object{{"pid", pid}},
                                "can't get exec status for '" + std::to_string(pid) + "'");
  if (!res.is_object()) return res;
  for (auto& [key, value] : res.as_object()) {
    if ((key == "out-data" || key == "err-data") && perl_true(&value) && value.is_string()) {
      value = perl_bytes_as_text(base64_decode(value.as_string()));
    } else if (value.is_bool()) {
      value = value.as_bool() ? 1 : 0;
    }
  }
  return res;
}

// file-read (QS9 PVE/API2/Qemu/Agent.pm l. 445-572): open, seek when `offset` is given, read in
// chunks of up to 1 MiB until `count` bytes (default 16 MiB) or eof, close (its error only warned).
// Not reaching eof is no error: the answer carries "truncated": 1.
bj::value agent_file_read(AgentConversation& agent, const AgentParams& params) {
  const std::string& file = *agent_param(params, "file");
  const std::string* count_param = agent_param(params, "count");
  const long long count = count_param != nullptr ? std::stoll(*count_param) : kMaxReadSize;
  const bool decode = agent_param(params, "decode") == nullptr || *agent_param(params, "decode") == "1";
  const long long offset = agent_param(params, "offset") != nullptr ? std::stoll(*agent_param(params, "offset")) : 0;

  const bj::value handle = agent.checked("guest-file-open", bj::object{{"path", file}}, "can't open file");
  if (offset > 0) {
    agent.checked("guest-file-seek", bj::object{{"handle", handle}, {"offset", offset}, {"whence", "set"}},
                  "can't seek to offset position");
  }
  long long bytes_read = 0;
  bool eof = false;
  std::string content;
  while (bytes_read < count && !eof) {
    const long long chunk_size = std::min(count - bytes_read, kReadChunk);
    const bj::value read =
        agent.checked("guest-file-read", bj::object{{"handle", handle}, {"count", chunk_size}}, "can't read from file");
    const bj::object* r = read.if_object();
    const bj::value* chunk = r != nullptr ? r->if_contains("buf-b64") : nullptr;
    const std::string text = chunk != nullptr && chunk->is_string() ? std::string(chunk->as_string()) : "";
    content += decode ? perl_bytes_as_text(base64_decode(text)) : text;
    const bj::value* n = r != nullptr ? r->if_contains("count") : nullptr;
    const long long got = n != nullptr && n->is_number() ? n->to_number<long long>() : 0;
    bytes_read += got;
    eof = perl_true(r != nullptr ? r->if_contains("eof") : nullptr);
    if (got == 0 && !eof) break;  // upstream would ask forever; an agent that answers so is broken
  }
  check_agent_error(agent.mon_cmd("guest-file-close", bj::object{{"handle", handle}}), "can't close file", true);
  bj::object result{{"content", content}, {"bytes-read", bytes_read}};
  if (!eof) {
    if (count_param == nullptr) {
      std::cerr << "pvesim: agent file-read: reached maximum read size: " << kMaxReadSize
                << " bytes. output might be truncated.\n";
    }
    result["truncated"] = 1;
  }
  return result;
}

// parse_boolean (pve-common PVE/JSONSchema.pm): 1|on|yes|true, 0|off|no|false, any case.
std::optional<bool> agent_boolean(std::string value) {
  std::ranges::transform(value, value.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (value == "1" || value == "on" || value == "yes" || value == "true") return true;
  if (value == "0" || value == "off" || value == "no" || value == "false") return false;
  return std::nullopt;
}

// No qga socket at all: QEMU got the channel only if the agent was enabled when it started
// (QS9 PVE/QemuServer.pm config_to_command l. 3459-3472).
class NoAgentChannel final : public QgaPeer {
 public:
  bool reachable() const override { return false; }
  QgaResult execute(const std::string&, const bj::object&, std::chrono::milliseconds) override {
    return {nullptr, "no socket"};
  }
};

}  // namespace

const AgentEndpoint* find_agent_endpoint(const std::string& method, const std::string& command) {
  const auto& list = agent_endpoints();
  auto it =
      std::ranges::find_if(list, [&](const AgentEndpoint& e) { return e.method == method && e.command == command; });
  return it == list.end() ? nullptr : &*it;
}

// parse_guest_agent (QS9 PVE/QemuServer/Agent.pm l. 64) with $agent_fmt (l. 23-62) through
// pve-common's parse_property_string: "k=v" parts split on ',', a part without '=' is the default
// key `enabled`; an unknown or repeated key or a bad value makes the whole value not parse, and
// parse_guest_agent then returns {} (warned), so the agent counts as disabled.
bool agent_enabled(const Config& conf) {
  const auto it = conf.find("agent");
  if (it == conf.end()) return false;
  static const std::set<std::string> booleans = {"enabled", "fstrim_cloned_disks", "freeze-fs-on-backup",
                                                 "guest-fsfreeze", "freeze-fs"};
  std::map<std::string, std::string> parsed;
  std::stringstream parts(it->second);
  for (std::string part; std::getline(parts, part, ',');) {
    if (part.find_first_not_of(" \t") == std::string::npos) continue;
    const std::size_t eq = part.find('=');
    const std::string key = eq == std::string::npos ? "enabled" : part.substr(0, eq);
    const std::string value = eq == std::string::npos ? part : part.substr(eq + 1);
    if (key.empty() || value.empty() || parsed.contains(key)) return false;
    if (booleans.contains(key) ? !agent_boolean(value) : key != "type" || (value != "virtio" && value != "isa")) {
      return false;
    }
    parsed[key] = value;
  }
  return parsed.contains("enabled") && agent_boolean(parsed["enabled"]).value_or(false);
}

AgentService::AgentService(AgentOptions options) : options_(std::move(options)) {}

AgentService::~AgentService() {
  stop();
}

// The handler after load_config: assert_agent_available (QS9 PVE/QemuServer/Agent.pm l. 109),
// which every endpoint runs before its first guest command -- the generic ones directly, the
// others through agent_cmd (l. 116) -- then the endpoint's own commands.
AgentOutcome AgentService::call(const AgentEndpoint& endpoint, const AgentTarget& target, const AgentParams& params) {
  try {
    if (!target.conf.contains("agent")) throw AgentDie{"No QEMU guest agent configured"};
    if (!target.running) throw AgentDie{"VM " + std::to_string(target.vmid) + " is not running"};
    const std::shared_ptr<QgaPeer> peer = peer_for(target);
    AgentConversation agent(*peer, target.vmid, options_);
    if (!agent.check_running()) throw AgentDie{"QEMU guest agent is not running"};
    switch (endpoint.call) {
      case AgentCall::exec:
        return {true, "", agent_exec(agent, params)};
      case AgentCall::exec_status:
        return {true, "", agent_exec_status(agent, params)};
      case AgentCall::file_read:
        return {true, "", agent_file_read(agent, params)};
      case AgentCall::generic:
        break;
    }
    // register_command's handler (QS9 PVE/API2/Qemu/Agent.pm l. 228-241): guest-<command> without
    // arguments; a QGA error reply is no error here, it is the result ({"error": {class, desc}}).
    return {true, "", bj::object{{"result", agent.mon_cmd("guest-" + endpoint.command, {})}}};
  } catch (const AgentDie& die) {
    return {false, die.message, nullptr};
  }
}

// Which agent answers for the VM: none without the channel; the recorded one when the state gives
// one (kept per QEMU process, so that its exec pids and file handles live between calls); else a
// real one at --qga-dir/<vmid>.qga, if pvesim has a --qga-dir.
std::shared_ptr<QgaPeer> AgentService::peer_for(const AgentTarget& target) {
  if (!agent_enabled(target.conf)) return std::make_shared<NoAgentChannel>();
  if (target.recorded) {
    std::lock_guard lock(mutex_);
    auto& guest = guests_[target.vmid];
    if (!guest || guest->spec() != target.recorded.get() || guest_pids_[target.vmid] != target.pid) {
      guest = std::make_shared<RecordedGuest>(target.recorded, reports_, stopping_);
      guest_pids_[target.vmid] = target.pid;
    }
    return guest;
  }
  if (options_.qga_dir.empty()) return std::make_shared<NoAgentChannel>();
  const std::string vmid = std::to_string(target.vmid);
  return std::make_shared<QgaSocket>(options_.qga_dir + "/" + vmid + ".qga", "VM " + vmid, stopping_);
}

}  // namespace pvesim
