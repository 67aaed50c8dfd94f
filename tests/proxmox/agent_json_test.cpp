// SPDX-License-Identifier: GPL-3.0-or-later
// The guest agent's answers through the Proxmox API, as qemu-server gives them (the shapes and
// texts of docs/guest-agent-upstream.md, each cited there): typed values, and every way the agent
// fails as a named outcome.
#include "proxmox/agent_json.hpp"

#include <catch2/catch.hpp>

using namespace pw::proxmox;
using agent::Outcome;

namespace {

const std::string kWhere = "GET https://pve1:8006/api2/json/nodes/pve1/qemu/101/agent/network-get-interfaces";

// A 500 as pve-http-server sends a handler's die: the text in the reason and in "message".
ApiError died(const std::string& text, int status = 500) {
  return error_from_response(status, text, R"({"data":null,"message":")" + text + R"(\n"})", kWhere);
}

}  // namespace

TEST_CASE("network-get-interfaces: names, MACs, addresses and byte counters") {
  // QGA 7.2's guest-network-get-interfaces, wrapped by qemu-server ({"result": ...}) and the
  // formatter ({"data": ...}); lo without statistics here, as an agent older than 2.11 sends all.
  auto r = agent::parse_interfaces(R"({"data":{"result":[
    {"name":"lo","hardware-address":"00:00:00:00:00:00",
     "ip-addresses":[{"ip-address":"127.0.0.1","ip-address-type":"ipv4","prefix":8}]},
    {"name":"ens19","hardware-address":"bc:24:11:a1:01:02",
     "ip-addresses":[{"ip-address":"198.51.100.10","ip-address-type":"ipv4","prefix":24},
                     {"ip-address":"fe80::be24:11ff:fea1:102","ip-address-type":"ipv6","prefix":64}],
     "statistics":{"rx-bytes":18446744073709551000,"rx-packets":5,"rx-errs":0,"rx-dropped":0,
                   "tx-bytes":67108864,"tx-packets":9,"tx-errs":0,"tx-dropped":0}}]}})");
  REQUIRE(r);
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].name == "lo");
  CHECK_FALSE((*r)[0].rx_bytes);
  const auto& e = (*r)[1];
  CHECK(e.mac == "bc:24:11:a1:01:02");
  REQUIRE(e.addresses.size() == 2);
  CHECK(e.addresses[0].address == "198.51.100.10");
  CHECK_FALSE(e.addresses[0].ipv6);
  CHECK(e.addresses[0].prefix == 24);
  CHECK(e.addresses[1].ipv6);
  CHECK(e.rx_bytes == 18446744073709551000ULL);  // uint64 counters, beyond int64
  CHECK(e.tx_bytes == 67108864u);
}

TEST_CASE("a QGA error inside a 200 answer is a named outcome, never an empty list") {
  auto missing = agent::parse_interfaces(
      R"({"data":{"result":{"error":{"class":"CommandNotFound","desc":"The command guest-network-get-interfaces has not been found"}}}})");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().outcome == Outcome::command_missing);
  auto frozen = agent::parse_interfaces(
      R"({"data":{"result":{"error":{"class":"CommandNotFound","desc":"Command guest-network-get-interfaces has been disabled: the agent is in frozen state"}}}})");
  REQUIRE_FALSE(frozen);
  CHECK(frozen.error().outcome == Outcome::frozen);
  for (const char* bad : {"", "{}", R"({"data":null})", R"({"data":{"result":{}}})", R"({"data":{"result":[{}]}})"}) {
    INFO(bad);
    auto r = agent::parse_interfaces(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().outcome == Outcome::malformed);
  }
}

TEST_CASE("file-read: the bytes, and a file over 16 MiB said as truncated") {
  auto r = agent::parse_file_read(
      R"({"data":{"content":"198.51.100.2:/volume1/movies /mnt/movies nfs vers=3 0 0\n","bytes-read":55}})");
  REQUIRE(r);
  CHECK(r->content.starts_with("198.51.100.2:/volume1/movies"));
  CHECK(r->bytes_read == 55);
  CHECK_FALSE(r->truncated);
  auto big = agent::parse_file_read(R"({"data":{"content":"x","bytes-read":16777216,"truncated":1}})");
  REQUIRE(big);
  CHECK(big->truncated);
  CHECK_FALSE(agent::parse_file_read(R"({"data":{"content":"x"}})"));
}

TEST_CASE("the guest's bytes come back as they were, though Proxmox sends each byte as a character") {
  // A fstab comment "# café" (UTF-8 C3 A9) arrives as "Ã©" (qemu-server's byte string through
  // to_json utf8): the exact bytes are the fstab's compare-and-swap token.
  auto r = agent::parse_file_read(R"({"data":{"content":"# caf\u00c3\u00a9\n","bytes-read":8}})");
  REQUIRE(r);
  CHECK(r->content == "# caf\xC3\xA9\n");
  auto binary = agent::parse_exec_status(R"({"data":{"exited":1,"exitcode":0,"out-data":"\u00ff\u0000\u0080"}})");
  REQUIRE(binary);
  CHECK(binary->out == std::string("\xFF\x00\x80", 3));
  // A character past U+00FF cannot come from bytes: the text is kept as sent.
  auto wide = agent::parse_exec_status(R"({"data":{"exited":1,"exitcode":0,"out-data":"\u20ac"}})");
  REQUIRE(wide);
  CHECK(wide->out == "\xE2\x82\xAC");
}

TEST_CASE("exec and exec-status: pid, then the decoded output once the process exited") {
  auto pid = agent::parse_exec(R"({"data":{"pid":4242}})");
  REQUIRE(pid);
  CHECK(*pid == 4242);
  CHECK_FALSE(agent::parse_exec(R"({"data":{"result":{"pid":4242}}})"));  // exec is not wrapped in result

  auto running = agent::parse_exec_status(R"({"data":{"exited":0}})");
  REQUIRE(running);
  CHECK_FALSE(running->exited);
  auto done = agent::parse_exec_status(
      R"({"data":{"exited":1,"exitcode":0,"out-data":"#pw mounts\nnfs4\n","err-data":"warn\n","out-truncated":1}})");
  REQUIRE(done);
  CHECK(done->exited);
  CHECK(done->exit_code == 0);
  CHECK(done->out == "#pw mounts\nnfs4\n");
  CHECK(done->err == "warn\n");
  CHECK(done->out_truncated);
  CHECK_FALSE(done->err_truncated);
  auto killed = agent::parse_exec_status(R"({"data":{"exited":1,"signal":9}})");
  REQUIRE(killed);
  CHECK(killed->signal == 9);
  CHECK_FALSE(killed->exit_code);
}

TEST_CASE("every way the agent does not answer is its own outcome") {
  CHECK(agent::classify(died("No QEMU guest agent configured")).outcome == Outcome::not_configured);
  CHECK(agent::classify(died("QEMU guest agent is not running")).outcome == Outcome::not_running);
  CHECK(agent::classify(died("VM 101 is not running")).outcome == Outcome::vm_not_running);
  CHECK(agent::classify(died("VM 101 qga command 'guest-exec' failed - got timeout")).outcome == Outcome::timeout);
  CHECK(agent::classify(died("VM 101 qmp command 'guest-file-read' failed - got timeout")).outcome ==
        Outcome::timeout);  // PVE 8 and 9.0.0-9.0.25 say qmp
  CHECK(agent::classify(died("Connection timed out", 596)).outcome == Outcome::timeout);
  auto nofile = agent::classify(
      died("Agent error: failed to open file '/proc/fs/nfsfs/servers' (mode: 'r'): No such file or directory"));
  CHECK(nofile.outcome == Outcome::agent_error);
  CHECK_THAT(nofile.message, Catch::Contains("/proc/fs/nfsfs/servers"));
  CHECK(agent::classify(died("Agent error: The command guest-exec has not been found")).outcome ==
        Outcome::command_missing);
  CHECK(agent::classify(died("Agent error: Invalid parameter 'pid'")).outcome == Outcome::agent_error);
  auto denied =
      agent::classify(died("Permission check failed (/vms/101, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)", 403));
  CHECK(denied.outcome == Outcome::permission);
  CHECK(denied.privilege == "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted");
  // A config lock's timeout is no agent timeout.
  CHECK(agent::classify(died("can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout")).outcome ==
        Outcome::api);
  CHECK(agent::endpoint({"pve1", 101}, "file-read") == "/nodes/pve1/qemu/101/agent/file-read");
}
