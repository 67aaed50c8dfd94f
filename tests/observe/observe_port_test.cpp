// SPDX-License-Identifier: GPL-3.0-or-later
// The agent observation port against a fake GuestAgent and a fake SSH port: which guest goes
// which way, what the agent is asked to run, and every way it can fail to answer.
#include "observe/observe_port.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "guest/interfaces.hpp"
#include "guest/script_output.hpp"
#include "guest/sha256.hpp"
#include "observe/agent_facts.hpp"
#include "text_files.hpp"

using namespace pw;
using proxmox::VmRef;
using proxmox::agent::ExecStatus;
using proxmox::agent::Outcome;
using proxmox::agent::Problem;

namespace {

constexpr std::string_view kToken = "6b1f0e2d-9c8a-4b7d-a6e5-f4d3c2b1a098";
const std::string kFstab = "192.0.2.2:/volume1/movies /mnt/movies nfs vers=3,nconnect=8 0 0\n";

std::string report(const std::string& boot_id) {
  return guest::framed_output(kToken, {{"fstab", pw::testing::base64(kFstab) + "\n"}, {"boot_id", boot_id + "\n"}});
}

ExecStatus exited(std::string out, int code = 0, std::string err = {}) {
  ExecStatus s;
  s.exited = true;
  s.exit_code = code;
  s.out = std::move(out);
  s.err = std::move(err);
  return s;
}

// Answers per VM id: the facts script's run, or the agent's failure; records what was asked.
class FakeAgent final : public proxmox::GuestAgent {
 public:
  std::map<int, proxmox::AgentResult<ExecStatus>> facts;
  std::map<int, proxmox::AgentResult<ExecStatus>> docker;
  std::vector<proxmox::AgentExec> asked;
  int batches = 0;

  std::vector<proxmox::AgentResult<ExecStatus>> exec(std::span<const proxmox::AgentExec> runs) override {
    ++batches;
    std::vector<proxmox::AgentResult<ExecStatus>> out;
    for (const auto& r : runs) {
      asked.push_back(r);
      const bool is_docker = r.command.at(5).find("docker") != std::string::npos;
      auto& table = is_docker ? docker : facts;
      auto it = table.find(r.vm.vmid);
      out.push_back(it != table.end()
                        ? it->second
                        : std::unexpected(Problem{Outcome::not_configured, "No QEMU guest agent configured", {}}));
    }
    return out;
  }
  // Read access: files per VM (absent: "No such file or directory", as the agent says it), and
  // the interface lists; a VM in `refuse` answers every read with that problem.
  std::map<int, std::map<std::string, std::string>> files;
  std::map<int, std::vector<proxmox::agent::Interface>> lists;
  std::map<int, Problem> refuse;
  std::vector<std::string> paths_read;

  std::vector<proxmox::AgentResult<proxmox::agent::FileRead>> read_files(
      std::span<const proxmox::AgentFileRead> reads) override {
    std::vector<proxmox::AgentResult<proxmox::agent::FileRead>> out;
    for (const auto& r : reads) {
      paths_read.push_back(r.path);
      if (auto p = refuse.find(r.vm.vmid); p != refuse.end()) {
        out.emplace_back(std::unexpected(p->second));
        continue;
      }
      auto& f = files[r.vm.vmid];
      if (auto it = f.find(r.path); it != f.end()) {
        // A file whose content is "<16 MiB>" stands for one over the agent's limit.
        const bool over = it->second == "<16 MiB>";
        out.push_back(proxmox::agent::FileRead{it->second, over ? 16777216U : it->second.size(), over});
      } else {
        out.emplace_back(std::unexpected(
            Problem{Outcome::agent_error,
                    "Agent error: failed to open file '" + r.path + "' (mode: 'r'): No such file or directory",
                    {}}));
      }
    }
    return out;
  }
  std::vector<proxmox::AgentResult<std::vector<proxmox::agent::Interface>>> interfaces(
      std::span<const VmRef> vms) override {
    std::vector<proxmox::AgentResult<std::vector<proxmox::agent::Interface>>> out;
    for (const auto& vm : vms) {
      if (auto p = refuse.find(vm.vmid); p != refuse.end()) {
        out.emplace_back(std::unexpected(p->second));
      } else {
        out.emplace_back(lists[vm.vmid]);
      }
    }
    return out;
  }
};

// The SSH port: facts with boot id "ssh-<host>" for every host asked; nothing else may be called
// except what the test says.
class FakeSsh final : public guest::GuestPort {
 public:
  std::vector<std::vector<std::string>> facts_calls;
  int applies = 0;

  using guest::GuestPort::gather_facts;
  guest::PerHost<guest::GuestFacts> gather_facts(std::span<const std::string> hosts,
                                                 const guest::FactsRequests&) override {
    facts_calls.emplace_back(hosts.begin(), hosts.end());
    guest::PerHost<guest::GuestFacts> out;
    for (const auto& h : hosts) {
      guest::GuestFacts f;
      f.host = h;
      f.boot_id = "ssh-" + h;
      out.emplace(h, std::move(f));
    }
    return out;
  }
  guest::PerHost<void> apply_fstab(std::span<const guest::FstabChange> changes) override {
    applies += static_cast<int>(changes.size());
    return {};
  }
  guest::PerHost<void> restore_fstab(std::span<const guest::FstabRestore>) override { return {}; }
  guest::PerHost<void> set_channels(std::span<const guest::ChannelsRequest>) override { return {}; }
  guest::PerHost<void> move_transport(std::span<const guest::TransportMove>) override { return {}; }
  guest::PerHost<guest::ProbeOutcome> probe(std::span<const guest::ProbeRequest>) override { return {}; }
  guest::PerHost<guest::GuestFacts> wait_reachable(std::span<const std::string>, std::chrono::seconds) override {
    return {};
  }
};

struct Setup {
  FakeAgent agent;
  FakeSsh* ssh = nullptr;
  std::unique_ptr<guest::GuestPort> port;

  explicit Setup(observe::Via via, observe::Access access = observe::Access::exec) {
    auto s = std::make_unique<FakeSsh>();
    ssh = s.get();
    port = observe::make_observe_port(agent, std::move(s),
                                      {.via = via,
                                       .access = access,
                                       .fstab_path = "/etc/fstab",
                                       .deadline = std::chrono::seconds(60),
                                       .api_identity = "pathwarden@pve!observe"});
  }
};

guest::FactsRequests wanted(std::initializer_list<std::pair<std::string, int>> hosts) {
  guest::FactsRequests w;
  for (const auto& [h, vmid] : hosts) w[h].vm = VmRef{"pve1", vmid};
  return w;
}

}  // namespace

TEST_CASE("the agent runs the SSH port's own facts script as argv words, under the guest's timeout") {
  Setup s(observe::Via::agent);
  s.agent.facts.emplace(101, exited(report("agent-101")));
  auto w = wanted({{"media-vm", 101}});
  w["media-vm"].names = {"nas.example.test"};
  const std::vector<std::string> hosts{"media-vm"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.at("media-vm"));
  CHECK(facts.at("media-vm")->boot_id == "agent-101");
  CHECK(facts.at("media-vm")->fstab_content == kFstab);
  CHECK(facts.at("media-vm")->channel == guest::FactsChannel::agent);
  CHECK(facts.at("media-vm")->agent_unused.empty());
  CHECK(s.ssh->facts_calls.empty());
  REQUIRE(s.agent.asked.size() == 1);
  const auto& cmd = s.agent.asked[0].command;
  // /bin/sh -c WRAPPER sh LIMIT SCRIPT FSTAB NAME: the script ends 5 s before the controller stops
  // waiting; no value is ever shell text.
  REQUIRE(cmd.size() == 8);
  CHECK(cmd[0] == "/bin/sh");
  CHECK(cmd[1] == "-c");
  CHECK(cmd[2].find("exec timeout -k 5 \"$limit\" /bin/sh -c \"$script\" sh \"$@\"") != std::string::npos);
  CHECK(cmd[4] == "55");
  CHECK(cmd[5] == guest::guest_report_script());
  CHECK(cmd[6] == "/etc/fstab");
  CHECK(cmd[7] == "nas.example.test");
  CHECK(s.agent.asked[0].read_only);
  CHECK(s.agent.asked[0].deadline == std::chrono::seconds(60));
}

TEST_CASE("auto: a guest the agent cannot read is read over SSH, and the report says why") {
  Setup s(observe::Via::automatic);
  s.agent.facts.emplace(101, exited(report("agent-101")));
  s.agent.facts.emplace(102, std::unexpected(Problem{Outcome::not_running, "QEMU guest agent is not running", {}}));
  s.agent.facts.emplace(
      103, std::unexpected(Problem{Outcome::permission, "Permission check failed", "VM.GuestAgent.Unrestricted"}));
  // 104: no agent configured (the fake's default); "no-vm": a guest without a VM in the request.
  auto w = wanted({{"a", 101}, {"b", 102}, {"c", 103}, {"d", 104}});
  const std::vector<std::string> hosts{"a", "b", "c", "d", "no-vm"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.size() == 5);
  CHECK(facts.at("a")->channel == guest::FactsChannel::agent);
  for (const char* h : {"b", "c", "d", "no-vm"}) {
    INFO(h);
    REQUIRE(facts.at(h));
    CHECK(facts.at(h)->boot_id == std::string("ssh-") + h);
    CHECK(facts.at(h)->channel == guest::FactsChannel::ansible);
  }
  CHECK(facts.at("b")->agent_unused == "not-running: QEMU guest agent is not running");
  CHECK(facts.at("c")->agent_unused.starts_with("permission: "));
  CHECK(facts.at("d")->agent_unused.starts_with("not-configured: "));
  CHECK(facts.at("no-vm")->agent_unused.empty());
  // One SSH run for all of them, after the one agent batch.
  REQUIRE(s.ssh->facts_calls.size() == 1);
  CHECK(s.ssh->facts_calls[0] == std::vector<std::string>{"no-vm", "b", "c", "d"});
  CHECK(s.agent.batches == 1);
}

TEST_CASE("agent only: a guest the agent cannot read is unobserved with the reason and the remedy") {
  Setup s(observe::Via::agent);
  s.agent.facts.emplace(102, std::unexpected(Problem{Outcome::not_running, "QEMU guest agent is not running", {}}));
  s.agent.facts.emplace(103, std::unexpected(Problem{Outcome::permission, "Permission check failed (/vms/103, ...)",
                                                     "VM.GuestAgent.Unrestricted"}));
  s.agent.facts.emplace(105, std::unexpected(Problem{Outcome::timeout, "got timeout", {}}));
  auto w = wanted({{"b", 102}, {"c", 103}, {"d", 104}, {"e", 105}});
  const std::vector<std::string> hosts{"b", "c", "d", "e"};
  auto facts = s.port->gather_facts(hosts, w);
  CHECK(s.ssh->facts_calls.empty());
  REQUIRE_FALSE(facts.at("b"));
  CHECK(facts.at("b").error().kind == guest::GuestFailure::Kind::unreachable);
  CHECK(facts.at("b").error().error.what ==
        "not observed through the QEMU guest agent (not-running): QEMU guest agent is not running");
  CHECK_THAT(facts.at("b").error().error.hint, Catch::Contains("apt install qemu-guest-agent"));
  CHECK_THAT(facts.at("c").error().error.hint, Catch::Contains("VM.GuestAgent.Unrestricted on /vms/103"));
  CHECK_THAT(facts.at("c").error().error.hint, Catch::Contains("PVE 8: VM.Monitor"));
  CHECK_THAT(facts.at("c").error().error.hint,
             Catch::Contains("pveum acl modify /vms/103 --roles PathwardenObserve --tokens 'pathwarden@pve!observe'"));
  CHECK_THAT(facts.at("d").error().error.hint, Catch::Contains("qm set 104 --agent 1"));
  CHECK(facts.at("e").error().kind == guest::GuestFailure::Kind::timeout);
}

TEST_CASE("the guest's own answer is final: auto does not ask SSH for the same failure") {
  Setup s(observe::Via::automatic);
  s.agent.facts.emplace(101, exited({}, 66, "base64: /etc/fstab: Permission denied\n"));
  s.agent.facts.emplace(102, exited("@@garbage\n"));
  s.agent.facts.emplace(103, exited({}, 124));
  auto w = wanted({{"a", 101}, {"b", 102}, {"c", 103}});
  const std::vector<std::string> hosts{"a", "b", "c"};
  auto facts = s.port->gather_facts(hosts, w);
  CHECK(s.ssh->facts_calls.empty());
  REQUIRE_FALSE(facts.at("a"));
  CHECK(facts.at("a").error().kind == guest::GuestFailure::Kind::failed);
  CHECK(facts.at("a").error().error.what == "the facts script failed: base64: /etc/fstab: Permission denied");
  REQUIRE_FALSE(facts.at("b"));
  REQUIRE_FALSE(facts.at("c"));
  CHECK(facts.at("c").error().kind == guest::GuestFailure::Kind::timeout);
  CHECK_THAT(facts.at("c").error().error.what, Catch::Contains("did not finish within 55 s"));
}

TEST_CASE("output past the agent's 16 MiB is no partial report: auto reads that guest over SSH") {
  Setup s(observe::Via::automatic);
  auto cut = exited(report("x").substr(0, 40));
  cut.out_truncated = true;
  s.agent.facts.emplace(101, cut);
  auto w = wanted({{"a", 101}});
  const std::vector<std::string> hosts{"a"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.at("a"));
  CHECK(facts.at("a")->channel == guest::FactsChannel::ansible);
  CHECK_THAT(facts.at("a")->agent_unused, Catch::Contains("16 MiB"));
}

TEST_CASE("Docker's volumes come from a second agent run as root, its failure the policy's alone") {
  Setup s(observe::Via::agent);
  s.agent.facts.emplace(101, exited(report("a")));
  s.agent.facts.emplace(102, exited(report("b")));
  s.agent.docker.emplace(101, exited("[]"));
  s.agent.docker.emplace(102, exited({}, 3, "docker: command not found\n"));
  auto w = wanted({{"a", 101}, {"b", 102}});
  w["a"].docker_volumes = true;
  w["b"].docker_volumes = true;
  const std::vector<std::string> hosts{"a", "b"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.at("a"));
  REQUIRE(facts.at("a")->docker.has_value());
  CHECK(facts.at("a")->docker->has_value());
  REQUIRE(facts.at("b"));
  REQUIRE(facts.at("b")->docker.has_value());
  REQUIRE_FALSE(facts.at("b")->docker->has_value());
  CHECK_THAT(facts.at("b")->docker->error().hint, Catch::Contains("install Docker"));
  CHECK(s.agent.asked.size() == 4);
}

TEST_CASE("changes stay over SSH") {
  Setup s(observe::Via::agent);
  std::vector<guest::FstabChange> changes(2);
  s.port->apply_fstab(changes);
  CHECK(s.ssh->applies == 2);
  CHECK(s.agent.asked.empty());
}

TEST_CASE("a host name that could be an option never reaches the guest's resolver") {
  Setup s(observe::Via::automatic);
  s.agent.facts.emplace(101, exited(report("a")));
  auto w = wanted({{"a", 101}});
  w["a"].names = {"-x"};
  const std::vector<std::string> hosts{"a"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE_FALSE(facts.at("a"));
  CHECK(facts.at("a").error().error.what == "'-x' is not a host name to resolve");
  CHECK(s.agent.asked.empty());
  CHECK(s.ssh->facts_calls.empty());
}

TEST_CASE("via and access read and print as the settings spell them") {
  for (auto name : observe::kViaNames) CHECK(observe::to_string(*observe::via_from(name)) == name);
  for (auto name : observe::kAccessNames) CHECK(observe::to_string(*observe::access_from(name)) == name);
  CHECK_FALSE(observe::via_from("Agent"));
  CHECK_FALSE(observe::access_from(""));
}

namespace {

// A guest as the kernel's files show it through agent/file-read: the lab guest's NFSv3 mount over
// link2 with its connection, a bridge br0 on top of link1 and a VLAN link2.10.
void readable_guest(FakeAgent& agent, int vmid) {
  auto& f = agent.files[vmid];
  f["/etc/fstab"] = kFstab;
  f["/proc/sys/kernel/random/boot_id"] = "3f1c2d4e-0000-4000-8000-000000000001\n";
  f["/proc/mounts"] = "198.51.100.2:/volume1/movies /mnt/movies nfs rw,vers=3,nconnect=8,addr=198.51.100.2 0 0\n";
  f["/proc/self/mountstats"] = "";
  f["/proc/net/dev"] =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
      "carrier compressed\n"
      "    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0  "
      "     0          0\n"
      " link2: 7000 50 0 0 0 0 0 0 9000 60 0 0 0 0 0 0\n";
  f["/proc/net/tcp"] =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   1: 0A6433C6:02F6 026433C6:0801 01 00000000:00000000 00:00000000 00000000     0        0 0 1\n"
      "   2: 0A6433C6:A000 026433C6:0016 01 00000000:00000000 00:00000000 00000000     0        0 0 1\n";
  f["/proc/net/vlan/config"] =
      "VLAN Dev name    | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\n"
      "link2.10       | 10  | link2\n";
  f["/sys/class/net/link2/uevent"] = "INTERFACE=link2\nIFINDEX=3\n";
  f["/sys/class/net/link2/operstate"] = "up\n";
  f["/sys/class/net/link2/speed"] = "-1\n";
  f["/sys/class/net/br0/uevent"] = "DEVTYPE=bridge\nINTERFACE=br0\nIFINDEX=5\n";
  f["/sys/class/net/link2.10/uevent"] = "DEVTYPE=vlan\nINTERFACE=link2.10\nIFINDEX=6\n";
  f["/sys/class/net/link2.10/speed"] = "10000\n";
  agent.lists[vmid] = {{"link2", "bc:24:11:a1:01:02", {{"198.51.100.10", false, 24}}, {}, {}},
                       {"br0", "bc:24:11:a1:01:01", {}, {}, {}},
                       {"link2.10", "bc:24:11:a1:01:02", {}, {}, {}},
                       {"../../etc", "00:00:00:00:00:01", {}, {}, {}}};
}

}  // namespace

TEST_CASE("read access: the kernel's files through agent/file-read; what only a program tells stays unknown") {
  Setup s(observe::Via::agent, observe::Access::read);
  readable_guest(s.agent, 101);
  auto w = wanted({{"media-vm", 101}});
  const std::vector<std::string> hosts{"media-vm"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.at("media-vm"));
  const auto& f = *facts.at("media-vm");
  CHECK(f.channel == guest::FactsChannel::agent);
  CHECK(f.fstab_content == kFstab);
  CHECK(f.fstab_sha256 == pw::guest::sha256_hex(kFstab));
  CHECK(f.boot_id == "3f1c2d4e-0000-4000-8000-000000000001");
  REQUIRE(f.mounts.size() == 1);
  CHECK(f.mounts[0].nconnect() == 8);
  // Only the NFS connection, without byte counters (tcp_info needs a program).
  REQUIRE(f.nfs_connections.size() == 1);
  CHECK(f.nfs_connections[0].local_address == "198.51.100.10");
  CHECK_FALSE(f.nfs_connections[0].bytes_acked);
  CHECK(f.nfs_servers.empty());  // /proc/fs/nfsfs/servers absent: no NFS client module, not an error
  REQUIRE(f.counters.size() == 2);
  REQUIRE(f.addresses.size() == 1);
  CHECK(f.addresses[0].interface == "link2");
  CHECK(f.addresses[0].prefix_length == 24);
  // A name from the guest that is not a plain name never becomes a path.
  REQUIRE(f.interfaces.size() == 3);
  for (const auto& p : s.agent.paths_read) CHECK(p.find("..") == std::string::npos);
  const auto* link2 = guest::find_interface(f.interfaces, "link2");
  REQUIRE(link2);
  CHECK(link2->ifindex == 3);
  CHECK(link2->mac == net::MacAddress("bc:24:11:a1:01:02"));
  CHECK(link2->permanent_mac.empty());
  CHECK(link2->queues_unknown);
  CHECK_FALSE(link2->channels);
  CHECK_FALSE(link2->speed_mbps);
  CHECK(link2->operstate == "up");
  const auto* br0 = guest::find_interface(f.interfaces, "br0");
  REQUIRE(br0);
  CHECK(br0->upper_device());  // its ports are a directory: unknown, so never the NIC
  CHECK(br0->lowers_unknown);
  const auto* vlan = guest::find_interface(f.interfaces, "link2.10");
  REQUIRE(vlan);
  CHECK(vlan->lowers == std::vector<std::string>{"link2"});
  CHECK(vlan->speed_mbps == 10000);
  CHECK(guest::find_nic_interface(f.interfaces, net::MacAddress("bc:24:11:a1:01:02")) == link2);
  CHECK(guest::device_below(f.interfaces, "link2.10") == link2);
  CHECK(s.agent.asked.empty());  // nothing run in the guest
}

TEST_CASE("read access: a name to resolve or Docker needs exec; auto reads that guest over SSH") {
  Setup s(observe::Via::automatic, observe::Access::read);
  readable_guest(s.agent, 101);
  readable_guest(s.agent, 102);
  auto w = wanted({{"a", 101}, {"b", 102}});
  w["a"].names = {"nas.example.test"};
  w["b"].docker_volumes = true;
  const std::vector<std::string> hosts{"a", "b"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.at("a"));
  CHECK(facts.at("a")->channel == guest::FactsChannel::ansible);
  CHECK_THAT(facts.at("a")->agent_unused, Catch::Contains("only a program in the guest can resolve"));
  REQUIRE(facts.at("b"));
  CHECK_THAT(facts.at("b")->agent_unused, Catch::Contains("Docker"));
  CHECK(s.agent.paths_read.empty());  // refused before anything was sent
}

TEST_CASE("read access: a missing fstab is the guest's answer; a refused read is the agent's") {
  Setup s(observe::Via::automatic, observe::Access::read);
  readable_guest(s.agent, 101);
  s.agent.files[101].erase("/etc/fstab");
  readable_guest(s.agent, 102);
  s.agent.refuse.emplace(102, Problem{Outcome::permission, "Permission check failed", "VM.GuestAgent.FileRead"});
  auto w = wanted({{"a", 101}, {"b", 102}});
  const std::vector<std::string> hosts{"a", "b"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE_FALSE(facts.at("a"));
  CHECK_THAT(facts.at("a").error().error.what, Catch::Contains("No such file or directory"));
  REQUIRE(facts.at("b"));
  CHECK(facts.at("b")->channel == guest::FactsChannel::ansible);
  CHECK(facts.at("b")->agent_unused.starts_with("permission: "));
  REQUIRE(s.ssh->facts_calls.size() == 1);
  CHECK(s.ssh->facts_calls[0] == std::vector<std::string>{"b"});
}

TEST_CASE("read access: a file over the agent's 16 MiB is no partial read: auto reads the guest over SSH") {
  Setup s(observe::Via::automatic, observe::Access::read);
  readable_guest(s.agent, 101);
  s.agent.files[101]["/proc/self/mountstats"] = "<16 MiB>";
  auto w = wanted({{"a", 101}});
  const std::vector<std::string> hosts{"a"};
  auto facts = s.port->gather_facts(hosts, w);
  REQUIRE(facts.at("a"));
  CHECK(facts.at("a")->channel == guest::FactsChannel::ansible);
  CHECK(facts.at("a")->agent_unused == "agent-error: /proc/self/mountstats is longer than the agent reads (16 MiB)");
}
