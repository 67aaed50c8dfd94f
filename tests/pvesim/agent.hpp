// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The guest agent endpoints, /nodes/{node}/qemu/{vmid}/agent/..., as qemu-server serves them
// (qemu-server PVE/API2/Qemu/Agent.pm and PVE/QemuServer/Agent.pm at e6352be, "QS9";
// docs/guest-agent-upstream.md): the privileges each needs, the checks before any guest command,
// the QGA commands each sends, and how their replies become the answer. The agent itself is a real
// one on a UNIX socket (qga_socket.hpp) or a recorded one (recorded_agent.hpp). The simulator glues
// this to HTTP (Handlers::agent) and runs each call on the node's pvedaemon workers
// (pvedaemon_workers.hpp).
#include <atomic>
#include <boost/json/value.hpp>
#include <chrono>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "qga_peer.hpp"
#include "recorded_agent.hpp"
#include "sim_state.hpp"

namespace pvesim {

using AgentParams = std::map<std::string, std::vector<std::string>>;  // as the request had them

// One parameter of an endpoint's schema, besides node and vmid.
struct AgentParam {
  enum class Type { string, list, integer, boolean };
  std::string name;
  Type type = Type::string;
  bool required = false;
  long long min = LLONG_MIN;
  long long max = LLONG_MAX;
  std::size_t max_length = 0;  // 0: none
};

enum class AgentCall {
  generic,      // register_command: guest-<command> without arguments, answered {"result": ...}
  exec,         // qemu_exec
  exec_status,  // qemu_exec_status
  file_read,
};

struct AgentEndpoint {
  std::string method;  // GET or POST
  std::string command;
  AgentCall call = AgentCall::generic;
  std::vector<std::string> privileges;  // any of them on /vms/{vmid} (PVE 9)
  std::vector<AgentParam> params;
};

// The endpoint behind `METHOD .../agent/COMMAND`, or nullptr (pvesim answers 501).
const AgentEndpoint* find_agent_endpoint(const std::string& method, const std::string& command);

// get_qga_key($conf, 'enabled') (QS9 PVE/QemuServer/Agent.pm l. 64-80): the `agent` option parsed
// as $agent_fmt, `enabled` its default key ("1" = "enabled=1"); a value that does not parse counts
// as disabled.
bool agent_enabled(const Config& conf);

struct AgentOptions {
  std::string qga_dir;                              // --qga-dir; "" = no real agents
  std::chrono::milliseconds ping_timeout{3000};     // qga_check_running's guest-ping (3 s)
  std::chrono::milliseconds command_timeout{5000};  // QMPClient::cmd's default (5 s)
};

// What a call needs of the VM, copied under the simulator's lock.
struct AgentTarget {
  int vmid = 0;
  Config conf;  // in effect (load_config), pending changes aside
  bool running = false;
  std::int64_t pid = 0;  // the QEMU process: a new one has a freshly started agent
  std::shared_ptr<const RecordedAgent> recorded;
};

struct AgentOutcome {
  bool ok = false;
  std::string message;  // the handler's die text (500) when !ok
  boost::json::value data;
};

class AgentService {
 public:
  explicit AgentService(AgentOptions options);
  ~AgentService();
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  // The handler's work after the permission check, the parameter check and load_config.
  AgentOutcome call(const AgentEndpoint& endpoint, const AgentTarget& target, const AgentParams& params);
  // Waits for agents end at once (pvesim is stopping).
  void stop() { stopping_ = true; }

 private:
  std::shared_ptr<QgaPeer> peer_for(const AgentTarget& target);

  AgentOptions options_;
  std::atomic<bool> stopping_{false};
  ReportCache reports_;
  std::mutex mutex_;
  std::map<int, std::shared_ptr<RecordedGuest>> guests_;  // by vmid; see peer_for
  std::map<int, std::int64_t> guest_pids_;                // the QEMU pid each one belongs to
};

}  // namespace pvesim
