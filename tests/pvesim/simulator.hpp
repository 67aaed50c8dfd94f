// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Proxmox VE API semantics pvesim serves, independent of HTTP plumbing: request in, response
// out. Handlers may block (config lock, hooks); the server calls them off its I/O threads.
#include <atomic>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sim_state.hpp"
#include "tap_counters.hpp"

namespace pvesim {

struct ApiRequest {
  std::string method;
  std::string target;                          // path?query as received
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

struct ApiResponse {
  int status = 200;
  std::string reason = "OK";
  std::string body;
  std::string content_type = "application/json;charset=UTF-8";
  int delay_ms = 0;   // answer only after this long (latency fault, failed-auth delay)
  bool drop = false;  // close the connection without answering

  // A call that a node's pvedaemon worker answers later (the guest agent's, pvedaemon_workers.hpp):
  // the server calls `deferred` with `respond`, which sends the real answer from whatever thread
  // (or is dropped, unanswered, when pvesim stops). Only this response's delay_ms is kept: it is
  // added to the real answer's.
  using Respond = std::function<void(ApiResponse&&)>;
  std::function<void(Respond)> deferred;
};

struct Faults {
  int latency_ms = 0;
  // Event-counted latency: after `slow_writes_after` more API writes (POST/PUT/DELETE) went by,
  // the next `slow_writes` writes are answered `slow_writes_ms` late. Tests assert the fault hit
  // through the `delayed_requests` counter, whatever the machine's speed.
  int slow_writes = 0;
  int slow_writes_after = 0;
  int slow_writes_ms = 0;
  double error_rate = 0.0;  // share of API requests answered with error_status
  int error_status = 503;
  int fail_next = 0;  // the next N API requests get error_status
  double drop_rate = 0.0;
  int drop_next = 0;
  struct ConcurrentEdit {
    int vmid = 0;
    int after_reads = 1;  // edit the config right after this many more reads of it
  };
  std::vector<ConcurrentEdit> concurrent_edits;
  struct TaskFailure {
    std::string type;  // qmstart, qmshutdown, qmstop, qmreboot, qmconfig
    int vmid = 0;      // 0 = any VM
    std::string message;
  };
  std::vector<TaskFailure> task_failures;

  boost::json::value to_json() const;
  // Merges the members present in `json`; lists replace. Returns "" or an error message.
  std::string merge(const boost::json::value& json);
};

struct SimOptions {
  int task_duration_ms = 100;        // how long each task takes before it does its work
  int boot_delay_ms = 200;           // after a reboot task ends, until the VM is started again
  int auth_failure_delay_ms = 3000;  // pveproxy delays failed authentication by 3 s
  std::chrono::seconds hook_timeout{600};
  std::string version = "9.0.3";
  std::string fingerprint;  // of the server certificate, for /nodes ssl_fingerprint
  bool log_requests = false;
  // pvestatd: /cluster/resources shows each guest's status as of the last sample, taken every
  // this many ms (pve-manager PVE/Service/pvestatd.pm, a 10 s loop), `unknown` before its first.
  // 0: live, every listing is a fresh sample. POST /pvesim/pvestatd takes one at once.
  int pvestatd_interval_ms = 0;
  // Nodes whose taps are real: node -> its /proc/net/dev (a file, or a network namespace file).
  std::map<std::string, std::string> node_net_dev;
  // The guest agent (agent.hpp): real agents' sockets are QGA_DIR/<vmid>.qga; qemu-server's
  // guest-ping budget (3 s) and every other guest command's (5 s); pvedaemon's workers per node.
  std::string qga_dir;
  int agent_ping_timeout_ms = 3000;
  int agent_command_timeout_ms = 5000;
  int pvedaemon_workers = 3;
};

class AgentService;
class PvedaemonWorkers;

class Simulator {
 public:
  Simulator(Cluster cluster, SimOptions options, Faults faults, std::uint64_t seed);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  void add_token(Token token);
  void add_user(User user);

  ApiResponse handle(const ApiRequest& request);

  boost::json::value state_json();
  // Counts accepted TLS connections (shown in /pvesim/stats): clients' pooling is visible there.
  void note_connection() { ++connections_; }
  // Joins task threads (reboots may still be starting their VM).
  void wait_for_tasks();
  // Ends the guest agent calls: queued ones are dropped, running ones stop waiting for their
  // agent. Before the server goes away, as their answers go to its connections.
  void stop_agent_calls();

  struct Task {
    std::string upid;
    std::string node;
    std::string type;
    std::string id;
    std::string user;     // user@realm
    std::string tokenid;  // token name when started with an API token
    std::int64_t pid = 0;
    std::int64_t pstart = 0;
    std::int64_t starttime = 0;
    std::int64_t endtime = 0;
    bool running = true;
    std::string exitstatus;
    std::vector<std::string> log;
  };

  struct Caller {
    std::string user;             // user@realm
    std::string tokenid;          // "" for tickets
    Acl acl;                      // the token's own entries, or the user's
    std::optional<Acl> user_acl;  // a token's user's entries, when that user is defined (--user)

    bool is_root() const { return user == "root@pam" && tokenid.empty(); }
    std::string full_id() const { return tokenid.empty() ? user : user + "!" + tokenid; }
    // Privilege -> propagated, on `path` (pve-access-control RPCEnvironment.pm, sub permissions).
    std::map<std::string, bool> privileges(const std::string& path) const;
    bool has(const std::string& path, const std::string& priv) const { return privileges(path).contains(priv); }
  };

 private:
  friend struct Handlers;

  Cluster cluster_;
  std::chrono::steady_clock::time_point
      next_sample_{};  // pvestatd's next sample (unset: one interval after the first listing)
  SimOptions options_;
  NodeNetDevs net_devs_;  // thread-safe on its own
  Faults faults_;
  std::mt19937_64 rng_;

  std::mutex mutex_;  // guards everything below and the contents of cluster_
  std::map<std::string, Token> tokens_;
  std::map<std::string, User> users_;
  std::map<std::string, std::pair<std::string, std::int64_t>> tickets_;  // ticket -> user, issued
  std::map<std::string, std::string> csrf_tokens_;                       // token -> user
  std::map<std::string, Task> tasks_;
  std::map<std::string, int> request_counts_;
  int api_requests_ = 0;
  int injected_errors_ = 0;
  int injected_drops_ = 0;
  int delayed_requests_ = 0;
  int concurrent_edits_done_ = 0;
  // Config writes that passed the checks under the config lock, and those of them sent without a
  // digest (tests prove a client never writes blind); writes refused for a stale digest.
  int config_writes_ = 0;
  int config_writes_without_digest_ = 0;
  int digest_mismatches_ = 0;
  std::int64_t next_pid_ = 0;
  std::atomic<int> connections_{0};

  std::atomic<bool> stopping_{false};  // set by the destructor: long waits in tasks end early
  std::mutex threads_mutex_;
  std::vector<std::thread> threads_;

  // Last, so that they go first: their threads use everything above.
  std::unique_ptr<AgentService> agent_;
  std::unique_ptr<PvedaemonWorkers> pvedaemon_;
};

}  // namespace pvesim
