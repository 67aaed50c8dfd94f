// SPDX-License-Identifier: GPL-3.0-or-later
#include "proxmox/net_device.hpp"

#include <catch2/catch.hpp>

using pw::proxmox::is_net_key;
using pw::proxmox::NetDeviceSpec;

namespace {

NetDeviceSpec parse(std::string_view text) {
  auto spec = NetDeviceSpec::parse(text);
  if (!spec) FAIL(spec.error().to_string());
  return *spec;
}

std::string parse_error(std::string_view text) {
  auto spec = NetDeviceSpec::parse(text);
  REQUIRE_FALSE(spec);
  return spec.error().to_string();
}

}  // namespace

TEST_CASE("netN: Proxmox's own form parses and prints back unchanged") {
  const std::string text = "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,firewall=1,queues=8,tag=10";
  NetDeviceSpec spec = parse(text);
  CHECK(spec.model() == "virtio");
  CHECK(spec.mac() == "BC:24:11:2A:3B:4C");
  CHECK(spec.bridge() == "vmbr1");
  CHECK(spec.queues() == 8);
  CHECK(spec.get("tag") == "10");
  CHECK(spec.to_string() == text);
  CHECK(spec.canonical() == text);
}

TEST_CASE("netN: changing one key keeps the others and their order") {
  NetDeviceSpec spec = parse("virtio=BC:24:11:2A:3B:4C,tag=10,bridge=vmbr1,queues=2,firewall=true");
  REQUIRE(spec.set("queues", "8"));
  CHECK(spec.to_string() == "virtio=BC:24:11:2A:3B:4C,tag=10,bridge=vmbr1,queues=8,firewall=true");
  // The canonical form is what Proxmox stores: sorted keys, booleans as 0/1.
  CHECK(spec.canonical() == "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,firewall=1,queues=8,tag=10");
}

TEST_CASE("netN: a key that was not there goes where Proxmox prints it") {
  NetDeviceSpec spec = parse("virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,firewall=1,tag=10");
  REQUIRE(spec.set("queues", "4"));
  CHECK(spec.to_string() == "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,firewall=1,queues=4,tag=10");
  NetDeviceSpec short_one = parse("e1000=BC:24:11:2A:3B:4C");
  REQUIRE(short_one.set("queues", "2"));
  CHECK(short_one.to_string() == "e1000=BC:24:11:2A:3B:4C,queues=2");
  REQUIRE(short_one.erase("queues"));
  CHECK(short_one.to_string() == "e1000=BC:24:11:2A:3B:4C");
  CHECK_FALSE(short_one.erase("model"));
}

TEST_CASE("netN: the other ways to write the model and MAC") {
  NetDeviceSpec keyed = parse("model=virtio,macaddr=bc:24:11:2a:3b:4c,bridge=vmbr0");
  CHECK(keyed.model() == "virtio");
  CHECK(keyed.mac() == "bc:24:11:2a:3b:4c");  // kept as written: Proxmox compares MACs as strings
  CHECK(keyed.to_string() == "model=virtio,macaddr=bc:24:11:2a:3b:4c,bridge=vmbr0");
  CHECK(keyed.canonical() == "virtio=bc:24:11:2a:3b:4c,bridge=vmbr0");

  NetDeviceSpec bare = parse("virtio,bridge=vmbr0");
  CHECK_FALSE(bare.mac());
  CHECK(bare.to_string() == "virtio,bridge=vmbr0");
  REQUIRE(bare.set("macaddr", "BC:24:11:00:00:01"));
  CHECK(bare.to_string() == "virtio=BC:24:11:00:00:01,bridge=vmbr0");

  CHECK(parse("virtio=BC:24:11:2A:3B:4C,,bridge=vmbr0,").to_string() == "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0");
}

TEST_CASE("netN: edits of the MAC print text that parses back to the same spec") {
  NetDeviceSpec late_model = parse("bridge=vmbr0,virtio");
  REQUIRE(late_model.set("macaddr", "BC:24:11:00:00:02"));
  CHECK(late_model.to_string() == "bridge=vmbr0,virtio=BC:24:11:00:00:02");
  CHECK(parse(late_model.to_string()) == late_model);

  NetDeviceSpec joined = parse("virtio=BC:24:11:00:00:03,bridge=vmbr0");
  REQUIRE(joined.erase("macaddr"));
  CHECK(joined.to_string() == "virtio,bridge=vmbr0");
  CHECK(parse(joined.to_string()) == joined);
}

TEST_CASE("netN: bad values are refused with the field and the allowed range") {
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,queues=65"),
             Catch::Contains("queues must be an integer from 0 to 64"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,queues=-1"), Catch::Contains("queues=-1"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,queues=eight"), Catch::Contains("queues=eight"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,tag=0"), Catch::Contains("tag must be an integer from 1 to 4094"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,mtu=70000"), Catch::Contains("from 1 to 65520"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,firewall=maybe"), Catch::Contains("firewall must be 1 or 0"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,rate=fast"), Catch::Contains("rate must be a number"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,trunks=10;x"), Catch::Contains("trunks must be VLAN ids"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,rate=1e"), Catch::Contains("rate must be a number"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,bridge=vm br"), Catch::Contains("is not a bridge name"));
  // Multicast (odd first octet) and malformed MACs.
  CHECK_THAT(parse_error("virtio=BD:24:11:2A:3B:4C"), Catch::Contains("not a unicast MAC address"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B"), Catch::Contains("not a unicast MAC address"));
}

TEST_CASE("netN: unknown and duplicate keys, missing model") {
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,queue=8"),
             Catch::Contains("unknown key 'queue'") && Catch::Contains("did you mean 'queues'"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,bridge=a,bridge=b"), Catch::Contains("duplicate key 'bridge'"));
  CHECK_THAT(parse_error("virtio=BC:24:11:2A:3B:4C,model=e1000"), Catch::Contains("duplicate key 'model'"));
  CHECK_THAT(parse_error("virtoi=BC:24:11:2A:3B:4C"), Catch::Contains("unknown key 'virtoi'"));
  CHECK_THAT(parse_error("virtoi"), Catch::Contains("did you mean 'virtio'"));
  CHECK_THAT(parse_error("bridge=vmbr0,queues=2"), Catch::Contains("names no NIC model"));
  CHECK_THAT(parse_error("virtio,bridge"), Catch::Contains("'bridge' needs a value"));
  NetDeviceSpec spec = parse("virtio=BC:24:11:2A:3B:4C");
  CHECK_FALSE(spec.set("queues", "100"));
  CHECK_FALSE(spec.set("speed", "10"));
  CHECK(spec.to_string() == "virtio=BC:24:11:2A:3B:4C");
}

TEST_CASE("netN keys") {
  CHECK(is_net_key("net0"));
  CHECK(is_net_key("net31"));
  CHECK_FALSE(is_net_key("net32"));
  CHECK_FALSE(is_net_key("net01"));
  CHECK_FALSE(is_net_key("net"));
  CHECK_FALSE(is_net_key("netx"));
  CHECK_FALSE(is_net_key("scsi0"));
}

TEST_CASE("netN: what qemu-server's schema accepts is read, and printed back exactly as written") {
  // $net_fmt with pve-common's is_integer/is_number and the bare trunks pattern (Network.pm,
  // JSONSchema.pm): signs, exponents, any VLAN numbers, and parts of only whitespace skipped.
  for (const char* text : {"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,queues=+8", "virtio=BC:24:11:2A:3B:4C,rate=1e3",
                           "virtio=BC:24:11:2A:3B:4C,rate=+1", "virtio=BC:24:11:2A:3B:4C,rate=.5",
                           "virtio=BC:24:11:2A:3B:4C,trunks=1;5000", "virtio=BC:24:11:2A:3B:4C,trunks=30-20",
                           "virtio=BC:24:11:2A:3B:4C,queues=08"}) {
    INFO(text);
    auto spec = NetDeviceSpec::parse(text);
    if (!spec) FAIL(spec.error().to_string());
    CHECK(spec->to_string() == text);  // never emitted differently from how it was read
  }
  CHECK(NetDeviceSpec::parse("virtio=BC:24:11:2A:3B:4C,queues=+8")->queues() == 8);
  auto blank = NetDeviceSpec::parse("virtio=BC:24:11:2A:3B:4C, ,bridge=vmbr0");
  REQUIRE(blank);
  CHECK(blank->bridge() == "vmbr0");
  // queues 0, absent and 1 are one queue in effect (print_netdevice_full: mq only when > 1).
  CHECK(NetDeviceSpec::parse("virtio=BC:24:11:2A:3B:4C,queues=0")->effective_queues() == 1);
  CHECK(NetDeviceSpec::parse("virtio=BC:24:11:2A:3B:4C")->effective_queues() == 1);
  CHECK(NetDeviceSpec::parse("virtio=BC:24:11:2A:3B:4C,queues=4")->effective_queues() == 4);
}
