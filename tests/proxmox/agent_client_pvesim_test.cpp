// SPDX-License-Identifier: GPL-3.0-or-later
// ApiGuestAgent against tests/pvesim's recorded agents over real HTTPS on loopback: the exec
// conversation, the per-node bound, and each way an agent fails to answer as its outcome.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "proxmox/agent_client.hpp"
#include "pvesim_process.hpp"
#include "temp_dir.hpp"

using namespace pw::proxmox;
using pw::proxmox::testing::default_pvesim_args;
using pw::proxmox::testing::fleet_vm;
using pw::proxmox::testing::make_client;
using pw::proxmox::testing::PvesimProcess;

namespace {

namespace bj = boost::json;

// VM `vmid` gets `agent: 1` and a recorded agent answering with `report` (its member `extra`
// added to the agent object).
void record_agent(PvesimProcess& sim, int vmid, const std::string& report, bj::object extra = {}) {
  sim.admin("PUT", "/pvesim/vms/" + std::to_string(vmid) + "/config", R"({"agent":"1"})");
  extra["report"] = report;
  sim.admin("PUT", "/pvesim/vms/" + std::to_string(vmid) + "/guest", bj::serialize(bj::object{{"agent", extra}}));
}

AgentExec facts_exec(int vmid) {
  return AgentExec{fleet_vm(vmid), {"/bin/sh", "-c", "true", "sh", "/etc/fstab"}, std::chrono::seconds(60), true};
}

}  // namespace

TEST_CASE("exec through the agent: polled to its end, the output per VM, every VM at once") {
  pw::testing::TempDir dir;
  const auto report = (dir.path() / "report.txt").string();
  std::ofstream(report) << "host media-vm mac bc:24:11:a1:01:02\n";
  // VMs on all three nodes (pvesim's fleet: 100+i on pve(1+i%3); 103 and 110 stopped, 109 an LXC
  // container); the agent answers "running" twice before the result, so the client polls.
  auto args = default_pvesim_args();
  args.insert(args.end(), {"--vms", "12", "--pvedaemon-workers", "8"});
  PvesimProcess sim(args);
  std::vector<int> ids{100, 101, 102, 104, 105, 106, 107, 108, 111};
  std::vector<AgentExec> runs;
  for (int id : ids) {
    record_agent(sim, id, report, {{"polls", 2}, {"substitute", bj::object{{"media-vm", "vm" + std::to_string(id)}}}});
    runs.push_back(facts_exec(id));
  }
  // The guest agent only of a VM whose exec is not the facts script: 127, said by the agent.
  runs.push_back(AgentExec{fleet_vm(100), {"/usr/bin/env", "true"}, std::chrono::seconds(60), true});
  auto client = make_client(sim.client_options());
  ApiGuestAgent agent(*client, {.per_node = 2});
  auto done = agent.exec(runs);
  REQUIRE(done.size() == runs.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    INFO(ids[i]);
    REQUIRE(done[i]);
    CHECK(done[i]->exited);
    CHECK(done[i]->exit_code == 0);
    CHECK(done[i]->out == "host vm" + std::to_string(ids[i]) + " mac bc:24:11:a1:01:02\n");
  }
  REQUIRE(done.back());
  CHECK(done.back()->exit_code == 127);
  CHECK(done.back()->err == "pvesim: no recorded output for /usr/bin/env");
  // Never more than per_node calls at a node's pvedaemon, though pvesim would take 8; every
  // exec and its three status reads handled (the 127 one too: VM 100 polls twice for any program).
  auto stats = sim.admin("GET", "/pvesim/stats").as_object();
  const auto& daemons = stats.at("pvedaemon").as_object();
  std::int64_t handled = 0;
  for (const auto& [node, d] : daemons) {
    INFO(std::string(node));
    CHECK(d.as_object().at("max_active").to_number<int>() <= 2);
    handled += d.as_object().at("handled").to_number<std::int64_t>();
  }
  CHECK(handled == static_cast<std::int64_t>(runs.size() * 4));  // exec, two "running", the result
}

TEST_CASE("every way an agent does not answer is its own outcome, read from Proxmox's words") {
  pw::testing::TempDir dir;
  const auto report = (dir.path() / "report.txt").string();
  std::ofstream(report) << "x\n";
  auto args = default_pvesim_args();
  args.insert(args.end(), {"--vms", "12", "--agent-ping-timeout-ms", "100", "--token",
                           "obs@pve!audit=s3cret:VM.Audit,VM.GuestAgent.Audit"});
  PvesimProcess sim(args);
  // 100: no agent key; 101: agent: 1 without an agent in the guest; 102: hung; 106: frozen;
  // 104: too old for guest-exec; 105: answers; 103: stopped (pvesim's fleet).
  sim.admin("PUT", "/pvesim/vms/101/config", R"({"agent":"1"})");
  record_agent(sim, 102, report, {{"state", "hung"}});
  record_agent(sim, 106, report, {{"state", "frozen"}});
  record_agent(sim, 104, report, {{"missing", bj::array{"guest-exec"}}});
  record_agent(sim, 105, report);
  sim.admin("PUT", "/pvesim/vms/103/config", R"({"agent":"1"})");
  auto client = make_client(sim.client_options());
  ApiGuestAgent agent(*client);
  std::vector<AgentExec> runs;
  for (int id : {100, 101, 102, 106, 104, 105, 103}) runs.push_back(facts_exec(id));
  auto done = agent.exec(runs);
  auto outcome = [&](std::size_t i) {
    INFO(i);
    REQUIRE_FALSE(done[i]);
    return done[i].error().outcome;
  };
  CHECK(outcome(0) == agent::Outcome::not_configured);
  CHECK(outcome(1) == agent::Outcome::not_running);
  CHECK(outcome(2) == agent::Outcome::not_running);  // qemu-server's verdict after the ping's budget
  CHECK(outcome(3) == agent::Outcome::frozen);
  CHECK(outcome(4) == agent::Outcome::command_missing);
  REQUIRE(done[5]);
  CHECK(done[5]->out == "x\n");
  CHECK(outcome(6) == agent::Outcome::vm_not_running);

  // A token with only VM.GuestAgent.Audit: exec needs Unrestricted; Proxmox names it.
  auto auditor = make_client(sim.client_options("obs@pve!audit", "s3cret"));
  ApiGuestAgent limited(*auditor);
  const std::array<AgentExec, 1> one{facts_exec(105)};
  auto refused = limited.exec(one);
  REQUIRE_FALSE(refused[0]);
  CHECK(refused[0].error().outcome == agent::Outcome::permission);
  CHECK(refused[0].error().privilege == "VM.GuestAgent.Unrestricted");
  // Listing interfaces is an Audit read: allowed.
  const std::array<VmRef, 1> vms{fleet_vm(105)};
  auto listed = limited.interfaces(vms);
  REQUIRE(listed[0]);
  CHECK(listed[0]->empty());
}

TEST_CASE("file-read: the bytes, a missing file named by the agent") {
  auto args = default_pvesim_args();
  args.insert(args.end(), {"--vms", "3"});
  PvesimProcess sim(args);
  sim.admin("PUT", "/pvesim/vms/101/config", R"({"agent":"1"})");
  sim.admin("PUT", "/pvesim/vms/101/guest",
            R"({"agent":{"files":{"/etc/fstab":"# caf\u00e9\n192.0.2.2:/v /mnt/v nfs vers=3 0 0\n"}}})");
  auto client = make_client(sim.client_options());
  ApiGuestAgent agent(*client);
  const std::vector<AgentFileRead> reads{{fleet_vm(101), "/etc/fstab"}, {fleet_vm(101), "/etc/missing"}};
  auto done = agent.read_files(reads);
  REQUIRE(done[0]);
  CHECK(done[0]->content == "# caf\xC3\xA9\n192.0.2.2:/v /mnt/v nfs vers=3 0 0\n");
  REQUIRE_FALSE(done[1]);
  CHECK(done[1].error().outcome == agent::Outcome::agent_error);
  CHECK(done[1].error().message.find("No such file or directory") != std::string::npos);
}
