// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// pvedaemon's worker processes, per node. Proxmox hands the `protected` API calls (the guest
// agent's among them) from pveproxy to the node's pvedaemon (pve-http-server
// PVE/APIServer/AnyEvent.pm proxy_request), which runs each handler synchronously in one of
// `max_workers => 3` processes (pve-manager PVE/Service/pvedaemon.pm l. 18): at most three such
// calls run at once per node, the others wait for a free worker (docs/guest-agent-upstream.md §5).
// Here each node has three threads of its own; a waiting call holds none of the server's request
// handler threads (--workers), so calls to other nodes and every other request go on.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pvesim {

class PvedaemonWorkers {
 public:
  explicit PvedaemonWorkers(int per_node);
  ~PvedaemonWorkers();
  PvedaemonWorkers(const PvedaemonWorkers&) = delete;
  PvedaemonWorkers& operator=(const PvedaemonWorkers&) = delete;

  // What a call's handler returns: sending its answer to the client. The worker counts the call
  // as done before it sends, as pvedaemon's worker is free once it has handed its answer back to
  // pveproxy; counting the send too would let a client that already has its answer and sent the
  // next call see one call more at once than it ever made (max_active off by one, by timing).
  using Deliver = std::function<void()>;
  // Queues `job` for one of `node`'s workers; never blocks. After stop() the job is dropped.
  void run(const std::string& node, std::function<Deliver()> job);
  // Drops the queued jobs and waits for the running ones.
  void stop();

  struct Stats {
    int active = 0;      // calls running now
    int waiting = 0;     // calls queued for a free worker
    int max_active = 0;  // the most that ran at once (since the last reset)
    long long handled = 0;
  };
  std::map<std::string, Stats> stats();
  void reset_stats();  // max_active back to the calls running now, handled to 0

 private:
  struct Node {
    std::deque<std::function<Deliver()>> queue;
    std::condition_variable wake;
    std::vector<std::thread> threads;
    Stats stats;
  };
  void work(Node& node);

  const int per_node_;
  std::mutex mutex_;
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<Node>> nodes_;
};

}  // namespace pvesim
