// SPDX-License-Identifier: GPL-3.0-or-later
#include "pvesim_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "proxmox/http_transport.hpp"
#include "temp_dir.hpp"

extern char** environ;

namespace pw::proxmox::testing {

namespace bj = boost::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> default_pvesim_args() {
  return {"--token", "root@pam!pw=s3cret", "--user", "root@pam=hunter2", "--auth-failure-delay-ms",
          "0",       "--task-duration-ms", "20",     "--boot-delay-ms",  "100"};
}

PvesimProcess::PvesimProcess(std::vector<std::string> args) : dir_(pw::testing::make_temp_dir("pvesim-test")) {
  const std::string ready = dir_ + "/ready.json";
  std::vector<std::string> argv_s{PVESIM_PATH, "--port", "0", "--ready-file", ready};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Its own /dev/null for stdin, never the test's: a shared description another process made
  // non-blocking would follow pvesim into every hook it starts.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  const int spawned = posix_spawn(&pid_, PVESIM_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot start " PVESIM_PATH);
  // Waiting for start-up is bounded only to turn a hang into a failure, not to measure anything.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(ready)) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("pvesim exited during start-up (see its stderr above)");
    }
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("pvesim did not become ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto info = bj::parse(read_file(ready)).as_object();
  url_ = std::string(info.at("url").as_string());
  fingerprint_ = std::string(info.at("fingerprint").as_string());
  ca_file_ = std::string(info.at("ca_file").as_string());
}

PvesimProcess::~PvesimProcess() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

int PvesimProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 3000 && !exited; ++i) {
    exited = waitpid(pid_, &status, WNOHANG) == pid_;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

ClientOptions PvesimProcess::client_options(std::string token_id, std::string secret) const {
  ClientOptions o;
  o.url = url_;
  o.token_id = std::move(token_id);
  o.token_secret = Secret(std::move(secret));
  o.ca_file = ca_file_;
  o.timeout = std::chrono::seconds(20);
  o.retry.base_delay = std::chrono::milliseconds(10);
  o.retry.max_delay = std::chrono::milliseconds(50);
  return o;
}

HttpResponse PvesimProcess::raw(HttpRequest request) {
  auto ep = parse_api_url(url_);
  if (!ep) throw std::runtime_error(ep.error().to_string());
  TransportOptions t;
  t.host = ep->host;
  t.port = ep->port;
  t.fingerprint = fingerprint_;
  auto transport = make_https_transport(t);
  if (!transport) throw std::runtime_error(transport.error().to_string());
  std::promise<TransportResult> promise;
  auto future = promise.get_future();
  const std::string target = request.target;
  (*transport)->async_send(std::move(request), [&](TransportResult r) { promise.set_value(std::move(r)); });
  auto r = future.get();
  if (!r) throw std::runtime_error("pvesim " + target + ": " + r.error().message);
  return std::move(*r);
}

bj::value PvesimProcess::admin(const std::string& method, const std::string& path, const std::string& body) {
  HttpRequest req;
  req.method = method;
  req.target = path;
  req.body = body;
  if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
  auto r = raw(std::move(req));
  if (r.status != 200) throw std::runtime_error("pvesim admin " + path + ": " + r.reason);
  return bj::parse(r.body).as_object().at("data");
}

int PvesimProcess::request_count(const std::string& key) {
  auto stats = admin("GET", "/pvesim/stats");
  const auto& requests = stats.as_object().at("requests").as_object();
  auto* v = requests.if_contains(key);
  return v == nullptr ? 0 : static_cast<int>(v->to_number<std::int64_t>());
}

bj::value PvesimProcess::guest_state(int vmid) {
  auto state = admin("GET", "/pvesim/state");
  for (const auto& g : state.as_object().at("guests").as_array()) {
    if (g.as_object().at("vmid").to_number<int>() == vmid) return g;
  }
  throw std::runtime_error("no guest " + std::to_string(vmid) + " in pvesim state");
}

std::string write_recording_hook(const std::string& dir, const std::string& log, const std::string& fail_flag) {
  const std::string path = dir + "/hook.sh";
  std::ofstream out(path);
  out << "#!/bin/sh\n"
         "# pvesim test hook: record every event, fail while the flag file exists\n"
         "printf '%s %s %s %s\\n' \"$1\" \"$2\" \"$4\" \"$(cat \"$3\")\" >> '"
      << log << "'\n"
      << "if [ -f '" << fail_flag << "' ]; then cat '" << fail_flag << "' >&2; exit 1; fi\n"
      << "exit 0\n";
  out.close();
  chmod(path.c_str(), 0755);
  return path;
}

std::unique_ptr<Client> make_client(const ClientOptions& options) {
  auto c = Client::create(options);
  if (!c) throw std::runtime_error("cannot make a client for pvesim: " + c.error().to_string());
  return std::move(*c);
}

}  // namespace pw::proxmox::testing
