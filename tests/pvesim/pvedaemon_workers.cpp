// SPDX-License-Identifier: GPL-3.0-or-later
#include "pvedaemon_workers.hpp"

#include <algorithm>

namespace pvesim {

PvedaemonWorkers::PvedaemonWorkers(int per_node) : per_node_(std::max(1, per_node)) {}

PvedaemonWorkers::~PvedaemonWorkers() {
  stop();
}

void PvedaemonWorkers::run(const std::string& node, std::function<Deliver()> job) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  auto& n = nodes_[node];
  if (!n) {
    // pvedaemon starts its workers with the daemon; pvesim when the node gets its first call.
    n = std::make_unique<Node>();
    for (int i = 0; i < per_node_; ++i) n->threads.emplace_back([this, &node_ref = *n] { work(node_ref); });
  }
  n->queue.push_back(std::move(job));
  n->stats.waiting = static_cast<int>(n->queue.size());
  n->wake.notify_one();
}

void PvedaemonWorkers::work(Node& node) {
  std::unique_lock lock(mutex_);
  while (true) {
    node.wake.wait(lock, [&] { return stopping_ || !node.queue.empty(); });
    if (stopping_) return;
    std::function<Deliver()> job = std::move(node.queue.front());
    node.queue.pop_front();
    node.stats.waiting = static_cast<int>(node.queue.size());
    node.stats.max_active = std::max(node.stats.max_active, ++node.stats.active);
    lock.unlock();
    Deliver deliver = job();
    job = nullptr;
    lock.lock();
    --node.stats.active;
    ++node.stats.handled;
    lock.unlock();
    if (deliver) deliver();
    deliver = nullptr;  // its captures (the client's connection) go before the lock is taken again
    lock.lock();
  }
}

void PvedaemonWorkers::stop() {
  std::vector<std::thread> threads;
  std::vector<std::function<Deliver()>> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [name, node] : nodes_) {
      for (auto& job : node->queue) dropped.push_back(std::move(job));
      node->queue.clear();
      node->stats.waiting = 0;
      for (auto& t : node->threads) threads.push_back(std::move(t));
      node->threads.clear();
      node->wake.notify_all();
    }
  }
  dropped.clear();
  for (auto& t : threads) t.join();
}

std::map<std::string, PvedaemonWorkers::Stats> PvedaemonWorkers::stats() {
  std::lock_guard lock(mutex_);
  std::map<std::string, Stats> out;
  for (const auto& [name, node] : nodes_) out[name] = node->stats;
  return out;
}

void PvedaemonWorkers::reset_stats() {
  std::lock_guard lock(mutex_);
  for (auto& [name, node] : nodes_) {
    node->stats.max_active = node->stats.active;
    node->stats.handled = 0;
  }
}

}  // namespace pvesim
