// SPDX-License-Identifier: GPL-3.0-or-later
#include "observe/observe_port.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <utility>

#include "guest/docker_volumes.hpp"
#include "observe/agent_facts.hpp"

namespace pw::observe {

std::string_view to_string(Via via) {
  switch (via) {
    case Via::ansible:
      return "ansible";
    case Via::agent:
      return "agent";
    case Via::automatic:
      return "auto";
  }
  return "ansible";
}

std::optional<Via> via_from(std::string_view text) {
  for (auto v : {Via::ansible, Via::agent, Via::automatic}) {
    if (to_string(v) == text) return v;
  }
  return std::nullopt;
}

std::string_view to_string(Access access) {
  return access == Access::read ? "read" : "exec";
}

std::optional<Access> access_from(std::string_view text) {
  if (text == "exec") return Access::exec;
  if (text == "read") return Access::read;
  return std::nullopt;
}

namespace {

using guest::GuestFailure;
using guest::PerHost;

// What to tell the operator about an agent that gave no answer to use, and what to do.
GuestFailure failure_of(const AgentMiss& miss, const std::string& host) {
  using proxmox::agent::Outcome;
  if (miss.guest_said) {
    return {miss.outcome == Outcome::timeout ? GuestFailure::Kind::timeout : GuestFailure::Kind::failed,
            Error{miss.message, host, miss.hint}};
  }
  auto kind = GuestFailure::Kind::unreachable;
  if (miss.outcome == Outcome::timeout) kind = GuestFailure::Kind::timeout;
  if (miss.outcome == Outcome::malformed || miss.outcome == Outcome::agent_error) kind = GuestFailure::Kind::failed;
  return {kind, Error{"not observed through the QEMU guest agent (" +
                          std::string(proxmox::agent::to_string(miss.outcome)) + "): " + miss.message,
                      host, miss.hint}};
}

class ObservePort final : public guest::GuestPort {
 public:
  ObservePort(proxmox::GuestAgent& agent, std::unique_ptr<guest::GuestPort> ssh, ObserveOptions options)
      : agent_(agent), ssh_(std::move(ssh)), o_(std::move(options)) {}

  using guest::GuestPort::gather_facts;
  PerHost<guest::GuestFacts> gather_facts(std::span<const std::string> hosts,
                                          const guest::FactsRequests& wanted) override {
    std::vector<AgentFactsRequest> through_agent;
    std::vector<std::string> over_ssh;
    for (const auto& h : hosts) {
      auto it = wanted.find(h);
      if (it == wanted.end() || !it->second.vm) {
        over_ssh.push_back(h);
        continue;
      }
      through_agent.push_back({h, *it->second.vm, it->second.names, it->second.path_mtu, it->second.docker_volumes});
    }
    PerHost<guest::GuestFacts> out;
    std::map<std::string, std::string, std::less<>> unused;  // host -> why not the agent (auto)
    auto read = o_.access == Access::exec
                    ? exec_facts(agent_, through_agent, o_.fstab_path, o_.deadline, o_.api_identity)
                    : read_facts(agent_, through_agent, o_.fstab_path, o_.api_identity);
    for (std::size_t i = 0; i < through_agent.size(); ++i) {
      const auto& host = through_agent[i].host;
      auto& r = read[i];
      if (r) {
        r->channel = guest::FactsChannel::agent;
        out.emplace(host, std::move(*r));
      } else if (o_.via == Via::automatic && !r.error().guest_said) {
        spdlog::debug("{}: not through the guest agent ({}), over SSH", host, r.error().message);
        unused.emplace(host, std::string(proxmox::agent::to_string(r.error().outcome)) + ": " + r.error().message);
        over_ssh.push_back(host);
      } else {
        out.emplace(host, std::unexpected(failure_of(r.error(), host)));
      }
    }
    if (!over_ssh.empty()) {
      for (auto& [host, facts] : ssh_->gather_facts(over_ssh, wanted)) {
        if (facts) {
          if (auto u = unused.find(host); u != unused.end()) facts->agent_unused = u->second;
        }
        out.insert_or_assign(host, std::move(facts));
      }
    }
    return out;
  }

  PerHost<void> apply_fstab(std::span<const guest::FstabChange> changes) override { return ssh_->apply_fstab(changes); }
  PerHost<void> restore_fstab(std::span<const guest::FstabRestore> restores) override {
    return ssh_->restore_fstab(restores);
  }
  PerHost<void> set_channels(std::span<const guest::ChannelsRequest> requests) override {
    return ssh_->set_channels(requests);
  }
  PerHost<void> move_transport(std::span<const guest::TransportMove> moves) override {
    return ssh_->move_transport(moves);
  }
  PerHost<guest::ProbeOutcome> probe(std::span<const guest::ProbeRequest> probes) override {
    return ssh_->probe(probes);
  }
  // A change is made over SSH, so its guest must answer there again.
  PerHost<guest::GuestFacts> wait_reachable(std::span<const std::string> hosts, std::chrono::seconds timeout) override {
    return ssh_->wait_reachable(hosts, timeout);
  }

 private:
  proxmox::GuestAgent& agent_;
  std::unique_ptr<guest::GuestPort> ssh_;
  ObserveOptions o_;
};

}  // namespace

std::unique_ptr<guest::GuestPort> make_observe_port(proxmox::GuestAgent& agent, std::unique_ptr<guest::GuestPort> ssh,
                                                    ObserveOptions options) {
  return std::make_unique<ObservePort>(agent, std::move(ssh), std::move(options));
}

}  // namespace pw::observe
