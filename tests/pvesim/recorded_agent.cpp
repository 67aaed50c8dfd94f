// SPDX-License-Identifier: GPL-3.0-or-later
// Over 400 lines: the state-file member parsers and the QGA commands of one recorded agent belong
// together (each command answers from one member), and splitting them would only add a header.
#include "recorded_agent.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "base64.hpp"

namespace pvesim {

namespace bj = boost::json;

namespace {

// qemu-ga 7.2's commands (Debian bookworm's qemu-guest-agent 1:7.2+dfsg-7+deb12u18, its
// qapi-schema.json; docs/guest-agent-upstream.md §4), as guest-info lists them.
constexpr std::array<const char*, 42> kQga72Commands = {"guest-sync-delimited",
                                                        "guest-sync",
                                                        "guest-ping",
                                                        "guest-get-time",
                                                        "guest-set-time",
                                                        "guest-info",
                                                        "guest-shutdown",
                                                        "guest-file-open",
                                                        "guest-file-close",
                                                        "guest-file-read",
                                                        "guest-file-write",
                                                        "guest-file-seek",
                                                        "guest-file-flush",
                                                        "guest-fsfreeze-status",
                                                        "guest-fsfreeze-freeze",
                                                        "guest-fsfreeze-freeze-list",
                                                        "guest-fsfreeze-thaw",
                                                        "guest-fstrim",
                                                        "guest-suspend-disk",
                                                        "guest-suspend-ram",
                                                        "guest-suspend-hybrid",
                                                        "guest-network-get-interfaces",
                                                        "guest-get-vcpus",
                                                        "guest-set-vcpus",
                                                        "guest-get-disks",
                                                        "guest-get-fsinfo",
                                                        "guest-set-user-password",
                                                        "guest-get-memory-blocks",
                                                        "guest-set-memory-blocks",
                                                        "guest-get-memory-block-info",
                                                        "guest-exec-status",
                                                        "guest-exec",
                                                        "guest-get-host-name",
                                                        "guest-get-users",
                                                        "guest-get-timezone",
                                                        "guest-get-osinfo",
                                                        "guest-get-devices",
                                                        "guest-ssh-get-authorized-keys",
                                                        "guest-ssh-add-authorized-keys",
                                                        "guest-ssh-remove-authorized-keys",
                                                        "guest-get-diskstats",
                                                        "guest-get-cpustats"};

// QEMU qga/main.c ga_freeze_allowlist: what a frozen agent still runs.
bool allowed_while_frozen(const std::string& command) {
  static const std::set<std::string> allowed = {
      "guest-ping", "guest-info", "guest-sync", "guest-sync-delimited", "guest-fsfreeze-status", "guest-fsfreeze-thaw"};
  return allowed.contains(command);
}

// Commands registered QCO_NO_SUCCESS_RESP (qga/qapi-schema.json 'success-response': false).
bool answers_success(const std::string& command) {
  return command != "guest-shutdown" && command != "guest-suspend-disk" && command != "guest-suspend-ram" &&
         command != "guest-suspend-hybrid";
}

// GUEST_EXEC_MAX_OUTPUT (QEMU qga/commands.c): each stream is kept up to 16 MiB, the rest dropped.
constexpr std::size_t kExecMaxOutput = 16u << 20;
// GUEST_FILE_READ_COUNT_MAX (qga/commands-posix.c, 7.x) and QGA_READ_COUNT_DEFAULT.
constexpr std::int64_t kFileReadCountMax = 48LL << 20;
constexpr std::int64_t kFileReadCountDefault = 4 << 10;

// The state member's names.
constexpr std::array<std::pair<RecordedAgent::State, std::string_view>, 4> kAgentStates = {{
    {RecordedAgent::State::answers, "answers"},
    {RecordedAgent::State::not_running, "not_running"},
    {RecordedAgent::State::hung, "hung"},
    {RecordedAgent::State::frozen, "frozen"},
}};

// A JSON object of strings into a map; "" or what is wrong.
std::string read_string_map(const bj::value& v, std::map<std::string, std::string>& out, bool nonempty_keys) {
  if (!v.is_object()) return "must be an object of strings";
  for (const auto& [k, s] : v.as_object()) {
    if (!s.is_string()) return "." + std::string(k) + ": must be a string";
    if (nonempty_keys && k.empty()) return ": a key must not be empty";
    out[std::string(k)] = std::string(s.as_string());
  }
  return {};
}

// One member of the "agent" object into `a`; "" or what is wrong (after the member's name).
std::string read_member(const std::string& key, const bj::value& v, RecordedAgent& a) {
  if (key == "report") {
    if (!v.is_string()) return ": must be a string (an absolute path)";
    a.report = std::string(v.as_string());
    if (!a.report.empty() && !a.report.starts_with("/")) return ": must be an absolute path";
  } else if (key == "substitute") {
    return read_string_map(v, a.substitute, true);
  } else if (key == "exit_code" || key == "polls") {
    if (!v.is_int64() && !v.is_uint64()) return ": must be an integer";
    const std::int64_t n = v.to_number<std::int64_t>();
    if (key == "polls" && (n < 0 || n > 1000000)) return ": must be from 0 to 1000000";
    if (key == "exit_code" && (n < -255 || n > 255)) return ": must be from -255 to 255";
    (key == "polls" ? a.polls : a.exit_code) = static_cast<int>(n);
  } else if (key == "stderr") {
    if (!v.is_string()) return ": must be a string";
    a.stderr_text = std::string(v.as_string());
  } else if (key == "state") {
    const std::string_view name = v.is_string() ? std::string_view(v.as_string()) : std::string_view();
    const auto it = std::ranges::find(kAgentStates, name, &std::pair<RecordedAgent::State, std::string_view>::second);
    if (it == kAgentStates.end()) return ": must be one of answers, not_running, hung, frozen";
    a.state = it->first;
  } else if (key == "missing") {
    if (!v.is_array()) return ": must be a list of QGA command names";
    for (const auto& c : v.as_array()) {
      if (!c.is_string()) return ": must be a list of QGA command names";
      a.missing.emplace(c.as_string());
    }
  } else if (key == "files") {
    return read_string_map(v, a.files, false);
  } else if (key == "interfaces") {
    if (!v.is_array()) return ": must be a list (guest-network-get-interfaces' result)";
    a.interfaces = v.as_array();
  } else if (key == "osinfo") {
    if (!v.is_object()) return ": must be an object (guest-get-osinfo's result)";
    a.osinfo = v.as_object();
  } else {
    return ": unknown member (report, substitute, exit_code, stderr, polls, state, missing, files, interfaces, osinfo)";
  }
  return {};
}

// QAPI's input visitor (QEMU qapi/qobject-input-visitor.c): a missing member, or one of the wrong
// type, is refused before the command runs.
bj::value missing_parameter(const char* name) {
  return qga_error("GenericError", std::string("Parameter '") + name + "' is missing");
}
bj::value wrong_type(const char* name, const char* type) {
  return qga_error("GenericError", std::string("Invalid parameter type for '") + name + "', expected: " + type);
}

// An integer argument: the value, or the QGA error reply in `error`.
std::optional<std::int64_t> int_argument(const bj::object& args, const char* name, bj::value& error,
                                         std::optional<std::int64_t> fallback = std::nullopt) {
  const bj::value* v = args.if_contains(name);
  if (v == nullptr) {
    if (!fallback) error = missing_parameter(name);
    return fallback;
  }
  if (!v->is_int64() && !v->is_uint64()) {
    error = wrong_type(name, "integer");
    return std::nullopt;
  }
  return v->to_number<std::int64_t>();
}

std::optional<std::string> string_argument(const bj::object& args, const char* name, bj::value& error,
                                           std::optional<std::string> fallback = std::nullopt) {
  const bj::value* v = args.if_contains(name);
  if (v == nullptr) {
    if (!fallback) error = missing_parameter(name);
    return fallback;
  }
  if (!v->is_string()) {
    error = wrong_type(name, "string");
    return std::nullopt;
  }
  return std::string(v->as_string());
}

bj::object default_osinfo() {
  // What bookworm's qemu-ga 7.2 reports on a Debian 12 guest (QGA72 schema l. 1303-1365 names).
  return bj::object{{"id", "debian"},
                    {"kernel-release", "6.1.0-31-amd64"},
                    {"kernel-version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.128-1 (2025-02-07)"},
                    {"machine", "x86_64"},
                    {"name", "Debian GNU/Linux"},
                    {"pretty-name", "Debian GNU/Linux 12 (bookworm)"},
                    {"version", "12 (bookworm)"},
                    {"version-id", "12"}};
}

}  // namespace

std::shared_ptr<const RecordedAgent> parse_recorded_agent(const bj::value& json, const std::string& where,
                                                          std::string& error) {
  if (!json.is_object()) {
    error = where + ": must be an object (README.md \"Guest agent\")";
    return nullptr;
  }
  auto agent = std::make_shared<RecordedAgent>();
  for (const auto& [key, value] : json.as_object()) {
    if (auto problem = read_member(std::string(key), value, *agent); !problem.empty()) {
      error = where + "." + std::string(key) + problem;
      return nullptr;
    }
  }
  return agent;
}

bj::value recorded_agent_json(const RecordedAgent& a) {
  bj::object o;
  if (!a.report.empty()) o["report"] = a.report;
  if (!a.substitute.empty()) {
    bj::object s;
    for (const auto& [k, v] : a.substitute) s[k] = v;
    o["substitute"] = std::move(s);
  }
  if (a.exit_code != 0) o["exit_code"] = a.exit_code;
  if (!a.stderr_text.empty()) o["stderr"] = a.stderr_text;
  if (a.polls != 0) o["polls"] = a.polls;
  o["state"] =
      std::ranges::find(kAgentStates, a.state, &std::pair<RecordedAgent::State, std::string_view>::first)->second;
  if (!a.missing.empty()) {
    bj::array m;
    for (const auto& c : a.missing) m.emplace_back(c);
    o["missing"] = std::move(m);
  }
  if (!a.files.empty()) {
    bj::object f;
    for (const auto& [path, content] : a.files) f[path] = content;
    o["files"] = std::move(f);
  }
  if (!a.interfaces.empty()) o["interfaces"] = a.interfaces;
  if (a.osinfo) o["osinfo"] = *a.osinfo;
  return o;
}

std::shared_ptr<const std::string> ReportCache::get(const std::string& path, std::string& error) {
  std::lock_guard lock(mutex_);
  if (auto it = reports_.find(path); it != reports_.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "pvesim: cannot read report " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto report = std::make_shared<const std::string>(text.str());
  reports_.emplace(path, report);
  return report;
}

RecordedGuest::RecordedGuest(std::shared_ptr<const RecordedAgent> spec, ReportCache& reports,
                             const std::atomic<bool>& stopping)
    : spec_(std::move(spec)), reports_(reports), stopping_(stopping) {}

bool RecordedGuest::reachable() const {
  return spec_->state != RecordedAgent::State::not_running;
}

QgaResult RecordedGuest::execute(const std::string& command, const bj::object& arguments,
                                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // QEMU's chardev serves one client at a time (chardev/char-socket.c tcp_chr_new_client): a
  // second caller waits its turn with its own timer running (docs/guest-agent-upstream.md §5).
  std::unique_lock channel(channel_, std::defer_lock);
  if (!channel.try_lock_until(deadline)) return {nullptr, "got timeout"};
  if (spec_->state == RecordedAgent::State::hung) {
    // Nobody reads the channel: the command's timer runs out (QMPClient mux_timeout). In short
    // steps, so that a stopping pvesim does not wait it out.
    while (!stopping_ && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          deadline - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
    }
    return {nullptr, "got timeout"};
  }
  return {dispatch(command, arguments), ""};
}

// qmp_dispatch (QEMU qapi/qmp-dispatch.c): an unknown command first, then a disabled one, both
// CommandNotFound; then the command itself.
bj::value RecordedGuest::dispatch(const std::string& command, const bj::object& arguments) {
  const bool known = std::ranges::find(kQga72Commands, command) != kQga72Commands.end();
  if (!known || spec_->missing.contains(command)) {
    return qga_error("CommandNotFound", "The command " + command + " has not been found");
  }
  if (spec_->state == RecordedAgent::State::frozen && !allowed_while_frozen(command)) {
    // ga_disable_not_allowed_freeze (qga/main.c): disable reason "the agent is in frozen state".
    return qga_error("CommandNotFound", "Command " + command + " has been disabled: the agent is in frozen state");
  }
  if (command == "guest-ping") return bj::object{};
  if (command == "guest-info") return info();
  if (command == "guest-network-get-interfaces") return spec_->interfaces;
  if (command == "guest-get-osinfo") return spec_->osinfo ? *spec_->osinfo : default_osinfo();
  if (command == "guest-exec") return exec(arguments);
  if (command == "guest-exec-status") return exec_status(arguments);
  if (command == "guest-file-open") return file_open(arguments);
  if (command == "guest-file-read") return file_read(arguments);
  if (command == "guest-file-seek") return file_seek(arguments);
  if (command == "guest-file-close") return file_close(arguments);
  // A 7.2 command pvesim's API does not send (no endpoint for it): not emulated.
  return qga_error("GenericError", "pvesim: the recorded agent does not emulate " + command);
}

// guest-info (qga/commands.c qmp_guest_info): the version and every registered command with
// whether it is enabled now; commands this agent lacks are not registered at all.
bj::value RecordedGuest::info() const {
  bj::array commands;
  for (const char* c : kQga72Commands) {
    if (spec_->missing.contains(c)) continue;
    const bool enabled = spec_->state != RecordedAgent::State::frozen || allowed_while_frozen(c);
    commands.push_back(bj::object{{"name", c}, {"enabled", enabled}, {"success-response", answers_success(c)}});
  }
  return bj::object{{"version", "7.2.22"}, {"supported_commands", std::move(commands)}};
}

// guest-exec (qga/commands.c qmp_guest_exec): starts the process and answers its pid at once. An
// exec of /bin/sh answers with the report; anything else, or no report, with exit code 127.
bj::value RecordedGuest::exec(const bj::object& arguments) {
  bj::value error;
  auto path = string_argument(arguments, "path", error);
  if (!path) return error;
  Process p;
  p.path = *path;
  p.polls_left = spec_->polls;
  if (*path == "/bin/sh" && !spec_->report.empty()) {
    std::string why;
    p.report = reports_.get(spec_->report, why);
    // A failed spawn is QERR_QGA_COMMAND_FAILED with the reason (qmp_guest_exec).
    if (!p.report) return qga_error("GenericError", "Guest agent command failed, error was '" + why + "'");
  }
  const std::int64_t pid = next_pid_++;
  processes_.emplace(pid, std::move(p));
  return bj::object{{"pid", pid}};
}

// guest-exec-status (qga/commands.c qmp_guest_exec_status): {"exited": false} while running; once
// exited the code and the output (base64, each stream only when not empty, `*-truncated` only
// when true), and the pid is forgotten: asking again is "Invalid parameter 'pid'".
bj::value RecordedGuest::exec_status(const bj::object& arguments) {
  bj::value error;
  auto pid = int_argument(arguments, "pid", error);
  if (!pid) return error;
  auto it = processes_.find(*pid);
  if (it == processes_.end()) return qga_error("GenericError", "Invalid parameter 'pid'");
  if (it->second.polls_left > 0) {
    --it->second.polls_left;
    return bj::object{{"exited", false}};
  }
  std::string out, err;
  int code = 127;
  if (it->second.report) {
    out = substituted(*it->second.report);
    err = spec_->stderr_text;
    code = spec_->exit_code;
  } else {
    err = "pvesim: no recorded output for " + it->second.path;
  }
  processes_.erase(it);
  bj::object status{{"exited", true}, {"exitcode", code}};
  const bool out_truncated = out.size() > kExecMaxOutput;
  const bool err_truncated = err.size() > kExecMaxOutput;
  if (out_truncated) out.resize(kExecMaxOutput);
  if (err_truncated) err.resize(kExecMaxOutput);
  if (!out.empty()) status["out-data"] = base64_encode(out);
  if (!err.empty()) status["err-data"] = base64_encode(err);
  if (out_truncated) status["out-truncated"] = true;
  if (err_truncated) status["err-truncated"] = true;
  return status;
}

// The report with this VM's substitutions: one pass from the left, at each place the longest key
// that matches, so that a replacement is never substituted again.
std::string RecordedGuest::substituted(const std::string& report) const {
  if (spec_->substitute.empty()) return report;
  std::vector<const std::pair<const std::string, std::string>*> keys;
  for (const auto& kv : spec_->substitute) keys.push_back(&kv);
  std::ranges::sort(keys, [](auto* a, auto* b) { return a->first.size() > b->first.size(); });
  std::string out;
  out.reserve(report.size());
  for (std::size_t i = 0; i < report.size();) {
    const auto hit =
        std::ranges::find_if(keys, [&](auto* kv) { return report.compare(i, kv->first.size(), kv->first) == 0; });
    if (hit != keys.end()) {
      out += (*hit)->second;
      i += (*hit)->first.size();
    } else {
      out += report[i++];
    }
  }
  return out;
}

// guest-file-open (qga/commands-posix.c qmp_guest_file_open): a handle from 1000 up
// (QGA_PSTATE_DEFAULT_FD_COUNTER), or fopen's failure.
bj::value RecordedGuest::file_open(const bj::object& arguments) {
  bj::value error;
  auto path = string_argument(arguments, "path", error);
  if (!path) return error;
  auto mode = string_argument(arguments, "mode", error, std::string("r"));
  if (!mode) return error;
  auto it = spec_->files.find(*path);
  if (it == spec_->files.end()) {
    return qga_error("GenericError",
                     "failed to open file '" + *path + "' (mode: '" + *mode + "'): No such file or directory");
  }
  const std::int64_t handle = next_handle_++;
  files_.emplace(handle, OpenFile{&it->second, 0});
  return handle;
}

// guest-file-read (qmp_guest_file_read): the handle first, then the count (default 4 KiB, at most
// 48 MiB); `eof` is feof() after fread(), so only a short read sets it; "buf-b64" is "" when
// nothing was read.
bj::value RecordedGuest::file_read(const bj::object& arguments) {
  bj::value error;
  auto it = find_handle(arguments, error);
  if (it == files_.end()) return error;
  auto count = int_argument(arguments, "count", error, kFileReadCountDefault);
  if (!count) return error;
  if (*count < 0 || *count > kFileReadCountMax) {
    return qga_error("GenericError", "value '" + std::to_string(*count) + "' is invalid for argument count");
  }
  OpenFile& f = it->second;
  const std::size_t left = f.content->size() - std::min(f.position, f.content->size());
  const std::size_t n = std::min(left, static_cast<std::size_t>(*count));
  const std::string data = f.content->substr(std::min(f.position, f.content->size()), n);
  f.position += n;
  return bj::object{{"count", n}, {"buf-b64", base64_encode(data)}, {"eof", n < static_cast<std::size_t>(*count)}};
}

// guest-file-seek (qmp_guest_file_seek): whence as QGASeek ("set", "cur", "end") or a number.
bj::value RecordedGuest::file_seek(const bj::object& arguments) {
  bj::value error;
  auto it = find_handle(arguments, error);
  if (it == files_.end()) return error;
  auto offset = int_argument(arguments, "offset", error);
  if (!offset) return error;
  const bj::value* whence = arguments.if_contains("whence");
  if (whence == nullptr) return missing_parameter("whence");
  std::int64_t base = 0;
  if (*whence == "cur" || *whence == 1) {
    base = static_cast<std::int64_t>(it->second.position);
  } else if (*whence == "end" || *whence == 2) {
    base = static_cast<std::int64_t>(it->second.content->size());
  } else if (*whence != "set" && *whence != 0) {
    return qga_error("GenericError", "Invalid parameter 'whence'");
  }
  if (base + *offset < 0) return qga_error("GenericError", "failed to seek file: Invalid argument");
  it->second.position = static_cast<std::size_t>(base + *offset);
  return bj::object{{"position", base + *offset}, {"eof", false}};
}

bj::value RecordedGuest::file_close(const bj::object& arguments) {
  bj::value error;
  auto it = find_handle(arguments, error);
  if (it == files_.end()) return error;
  files_.erase(it);
  return bj::object{};
}

// guest_file_handle_find (qga/commands-posix.c): the open file of the "handle" argument, or
// files_.end() with QGA's error in `error`.
std::map<std::int64_t, RecordedGuest::OpenFile>::iterator RecordedGuest::find_handle(const bj::object& arguments,
                                                                                     bj::value& error) {
  auto handle = int_argument(arguments, "handle", error);
  if (!handle) return files_.end();
  auto it = files_.find(*handle);
  if (it == files_.end()) {
    error = qga_error("GenericError", "handle '" + std::to_string(*handle) + "' has not been found");
  }
  return it;
}

}  // namespace pvesim
