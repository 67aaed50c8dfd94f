// SPDX-License-Identifier: GPL-3.0-or-later
// status/current's per-tap counters ("nics"), as qemu-server's vmstatus($vmid, 1) sends them.
#include <catch2/catch.hpp>

#include "proxmox/api_json.hpp"

using namespace pw::proxmox;

namespace {
const VmRef kVm{"pve1", 101};

VmStatus parsed(std::string_view body) {
  auto s = json::parse_vm_status(body, kVm);
  REQUIRE(s.has_value());
  return *s;
}
}  // namespace

TEST_CASE("a running VM's taps become counters per netN, in Proxmox's direction") {
  // Shape of a real answer (Proxmox VE 8/9): numbers, one entry per tap, top-level sums.
  const auto s = parsed(R"({"data":{"status":"running","qmpstatus":"running","vmid":101,"pid":4242,
      "netin":3000,"netout":1500,
      "nics":{"tap101i0":{"netin":1000,"netout":500},"tap101i1":{"netout":1000,"netin":2000}}}})");
  REQUIRE(s.nics.size() == 2);
  CHECK(s.nics.at(0) == TapCounters{1000, 500});
  CHECK(s.nics.at(1) == TapCounters{2000, 1000});
  CHECK(s.ignored_nics.empty());
}

TEST_CASE("counters sent as strings or as integral doubles are taken; 64-bit values survive") {
  const auto s = parsed(R"({"data":{"status":"running","nics":{
      "tap101i0":{"netin":"18446744073709551615","netout":"7"},
      "tap101i3":{"netin":1.0e3,"netout":9007199254740992.0}}}})");
  CHECK(s.nics.at(0) == TapCounters{18446744073709551615ULL, 7});
  CHECK(s.nics.at(3) == TapCounters{1000, 9007199254740992ULL});
  CHECK(s.ignored_nics.empty());
}

TEST_CASE("a stopped VM has no nics: an empty map, which means unknown, not zero") {
  const auto s = parsed(R"({"data":{"status":"stopped","qmpstatus":"stopped","netin":0,"netout":0}})");
  CHECK(s.nics.empty());
  CHECK(s.ignored_nics.empty());
  CHECK(parsed(R"({"data":{"status":"running","nics":null}})").nics.empty());
}

TEST_CASE("entries that are not this VM's taps with two counters are set aside and named") {
  const auto s = parsed(R"({"data":{"status":"running","nics":{
      "tap101i0":{"netin":1,"netout":2},
      "tap102i0":{"netin":5,"netout":5},
      "tap1010i0":{"netin":5,"netout":5},
      "tap101i":{"netin":5,"netout":5},
      "tap101i01":{"netin":5,"netout":5},
      "veth101i0":{"netin":5,"netout":5},
      "tap101i1":{"netin":-1,"netout":5},
      "tap101i2":{"netin":"12abc","netout":5},
      "tap101i4":{"netin":1.5,"netout":5},
      "tap101i5":{"netin":1},
      "tap101i6":[1,2]}}})");
  REQUIRE(s.nics.size() == 1);
  CHECK(s.nics.at(0) == TapCounters{1, 2});
  std::vector<std::string> keys;
  for (const auto& n : s.ignored_nics) keys.push_back(n.key);
  std::ranges::sort(keys);
  CHECK(keys == std::vector<std::string>{"tap1010i0", "tap101i", "tap101i01", "tap101i1", "tap101i2", "tap101i4",
                                         "tap101i5", "tap101i6", "tap102i0", "veth101i0"});
  for (const auto& n : s.ignored_nics) {
    if (n.key == "tap102i0") CHECK_THAT(n.reason, Catch::Contains("not a tap of VM 101"));
    if (n.key == "tap101i1") CHECK_THAT(n.reason, Catch::Contains("non-negative integers"));
  }
}

TEST_CASE("nics of the wrong type is flagged, and the rest of the status still parses") {
  const auto s = parsed(R"({"data":{"status":"running","pid":7,"nics":"tap101i0"}})");
  CHECK(s.nics.empty());
  REQUIRE(s.ignored_nics.size() == 1);
  CHECK(s.ignored_nics.front().key == "nics");
  CHECK(s.pid == 7);
}

TEST_CASE("a node's VM list (GET /nodes/{node}/qemu?full=1) gives each VM its pid and its own taps") {
  auto list = json::parse_vm_list(R"({"data":[
      {"vmid":101,"status":"running","pid":4242,"qmpstatus":"running",
       "nics":{"tap101i1":{"netin":2000,"netout":1000}}},
      {"vmid":"102","status":"stopped"},
      {"vmid":103,"status":"running","pid":77,"nics":{"tap101i0":{"netin":5,"netout":5}}}]})",
                                  "pve1");
  REQUIRE(list.has_value());
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].ref == VmRef{"pve1", 101});
  CHECK((*list)[0].pid == 4242);
  CHECK((*list)[0].nics.at(1) == TapCounters{2000, 1000});
  CHECK((*list)[1].ref.vmid == 102);
  CHECK((*list)[1].nics.empty());
  CHECK_FALSE((*list)[1].pid);
  CHECK((*list)[2].nics.empty());  // another VM's tap is never this one's
  CHECK((*list)[2].ignored_nics.size() == 1);

  for (const char* bad : {R"({"data":[{"status":"running"}]})", R"({"data":[{"vmid":-3,"status":"running"}]})",
                          R"({"data":[7]})", R"({"data":{"vmid":101}})"}) {
    INFO(bad);
    CHECK_FALSE(json::parse_vm_list(bad, "pve1").has_value());
  }
}
