// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/agent_client.hpp"

#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "proxmox/countdown.hpp"

namespace pw::proxmox {

// At most `cap` calls at a time per node; the others wait in order. Callbacks run on the client's
// I/O thread; a waiting call is started by the release of the one before it.
class ApiGuestAgent::NodeGate {
 public:
  explicit NodeGate(int cap) : cap_(std::max(1, cap)) {}

  void enter(const std::string& node, std::function<void()> start) {
    {
      std::lock_guard lock(mutex_);
      auto& n = nodes_[node];
      if (n.running >= cap_) {
        n.waiting.push_back(std::move(start));
        return;
      }
      ++n.running;
    }
    start();
  }

  void leave(const std::string& node) {
    std::function<void()> next;
    {
      std::lock_guard lock(mutex_);
      auto& n = nodes_[node];
      if (n.waiting.empty()) {
        --n.running;
        return;
      }
      next = std::move(n.waiting.front());
      n.waiting.pop_front();
    }
    next();
  }

 private:
  struct Node {
    int running = 0;
    std::deque<std::function<void()>> waiting;
  };
  const int cap_;
  std::mutex mutex_;
  std::map<std::string, Node> nodes_;
};

namespace {

agent::Problem problem_of(const ApiError& e) {
  return agent::classify(e);
}

constexpr CallOptions kAgentRead{.retry_transient_reads = false, .harmless_twice = false};
// The exec of a read-only script: seen twice it only runs twice.
constexpr CallOptions kAgentReadOnlyExec{.retry_transient_reads = false, .harmless_twice = true};

// One result slot per request of a batch, filled by callbacks, read after the countdown.
template <class T>
struct Batch : Countdown {
  std::vector<std::optional<AgentResult<T>>> slots;
};

template <class T>
std::vector<AgentResult<T>> collect(Batch<T>& batch) {
  if (!batch.slots.empty()) batch.wait();
  std::vector<AgentResult<T>> out;
  out.reserve(batch.slots.size());
  for (auto& s : batch.slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace

ApiGuestAgent::ApiGuestAgent(Client& client, GuestAgentOptions options)
    : client_(client), options_(std::move(options)), gate_(std::make_unique<NodeGate>(options_.per_node)) {
  if (options_.poll_waits.empty()) options_.poll_waits.emplace_back(100);
}

ApiGuestAgent::~ApiGuestAgent() = default;

std::vector<AgentResult<agent::ExecStatus>> ApiGuestAgent::exec(std::span<const AgentExec> runs) {
  // One function on purpose: a conversation's steps (exec, then exec-status until the end) are
  // callbacks on the I/O thread that share its state and the batch; apart they would need a class
  // for this one use.
  auto batch = std::make_shared<Batch<agent::ExecStatus>>();
  batch->slots.resize(runs.size());
  batch->left = runs.size();

  // One conversation: exec, then exec-status until the program exited or the deadline passed.
  // Each request holds a gate slot only while it is in flight, never while waiting to poll again.
  struct Conversation {
    std::size_t index = 0;
    VmRef vm;
    timing::Monotonic deadline{};
    std::chrono::milliseconds allowed{};
    long pid = 0;
    std::size_t polls = 0;
  };
  auto finish = [batch](const Conversation& c, AgentResult<agent::ExecStatus> r) {
    batch->slots[c.index] = std::move(r);
    batch->done();
  };
  // The poll is a self-referencing step; shared so that scheduled callbacks keep it alive.
  auto poll = std::make_shared<std::function<void(const std::shared_ptr<Conversation>&)>>();
  *poll = [this, finish, weak = std::weak_ptr(poll)](const std::shared_ptr<Conversation>& c) {
    gate_->enter(c->vm.node, [this, finish, weak, c] {
      client_.async_call(
          "GET", agent::endpoint(c->vm, "exec-status"), {{"pid", std::to_string(c->pid)}},
          [this, finish, weak, c](ApiResult<std::string> body) {
            gate_->leave(c->vm.node);
            if (!body) return finish(*c, std::unexpected(problem_of(body.error())));
            auto status = agent::parse_exec_status(*body);
            if (!status) return finish(*c, std::unexpected(status.error()));
            if (status->exited) return finish(*c, std::move(*status));
            if (client_.now() >= c->deadline) {
              return finish(*c, std::unexpected(agent::Problem{
                                    agent::Outcome::timeout,
                                    "the program (pid " + std::to_string(c->pid) + ") had not exited after " +
                                        std::to_string(c->allowed.count() / 1000) +
                                        " s; it goes on in the guest (the agent cannot end it)",
                                    {}}));
            }
            const auto& waits = options_.poll_waits;
            const auto wait = waits[std::min(++c->polls, waits.size() - 1)];
            auto self = weak.lock();
            if (!self) return finish(*c, std::unexpected(agent::Problem{agent::Outcome::api, "shut down", {}}));
            client_.schedule(wait, [self, c] { (*self)(c); });
          },
          kAgentRead);
    });
  };

  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto c = std::make_shared<Conversation>();
    c->index = i;
    c->vm = runs[i].vm;
    c->allowed = runs[i].deadline;
    c->deadline = client_.now() + runs[i].deadline;
    Client::Params params;
    for (const auto& arg : runs[i].command) params.emplace_back("command", arg);
    const auto how = runs[i].read_only ? kAgentReadOnlyExec : kAgentRead;
    gate_->enter(c->vm.node, [this, finish, poll, c, how, params = std::move(params)] {
      client_.async_call(
          "POST", agent::endpoint(c->vm, "exec"), params,
          [this, finish, poll, c](ApiResult<std::string> body) {
            gate_->leave(c->vm.node);
            if (!body) return finish(*c, std::unexpected(problem_of(body.error())));
            auto pid = agent::parse_exec(*body);
            if (!pid) return finish(*c, std::unexpected(pid.error()));
            c->pid = *pid;
            (*poll)(c);
          },
          how);
    });
  }
  auto out = collect(*batch);
  // The poll function refers to itself only weakly; drop ours only after every conversation ended.
  poll.reset();
  return out;
}

// One GET of `command` per request (`target`: its VM and parameters), parsed by `parse`, each
// holding a gate slot of its VM's node while in flight.
template <class T, class Request, class Target, class Parse>
std::vector<AgentResult<T>> ApiGuestAgent::each_get(std::span<const Request> requests, std::string_view command,
                                                    Target target, Parse parse) {
  auto batch = std::make_shared<Batch<T>>();
  batch->slots.resize(requests.size());
  batch->left = requests.size();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto [where, query] = target(requests[i]);
    const VmRef vm = where;
    auto params = std::move(query);
    gate_->enter(vm.node, [this, batch, i, vm, path = agent::endpoint(vm, command), params = std::move(params),
                           parse]() mutable {
      client_.async_call(
          "GET", std::move(path), params,
          [this, batch, i, node = vm.node, parse](ApiResult<std::string> body) {
            gate_->leave(node);
            if (!body) {
              batch->slots[i] = std::unexpected(problem_of(body.error()));
            } else {
              batch->slots[i] = parse(*body);
            }
            batch->done();
          },
          kAgentRead);
    });
  }
  return collect(*batch);
}

std::vector<AgentResult<agent::FileRead>> ApiGuestAgent::read_files(std::span<const AgentFileRead> reads) {
  return each_get<agent::FileRead>(
      reads, "file-read",
      [](const AgentFileRead& r) {
        return std::pair(r.vm, Client::Params{{"file", r.path}});
      },
      [](std::string_view body) { return agent::parse_file_read(body); });
}

std::vector<AgentResult<std::vector<agent::Interface>>> ApiGuestAgent::interfaces(std::span<const VmRef> vms) {
  return each_get<std::vector<agent::Interface>>(
      vms, "network-get-interfaces", [](const VmRef& vm) { return std::pair(vm, Client::Params{}); },
      [](std::string_view body) { return agent::parse_interfaces(body); });
}

}  // namespace pw::proxmox
