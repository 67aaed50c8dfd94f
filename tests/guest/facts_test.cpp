#include "guest/facts.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "guest/sha256.hpp"
#include "text_files.hpp"

namespace fs = std::filesystem;
using namespace pw::guest;

namespace {

// A report assembled from the lab VM's real outputs, in the layout the facts script prints.
std::string lab_report() {
  return "@@pathwarden boot_id\n3f1c2d4e-0000-4000-8000-000000000001\n"
         "@@pathwarden mounts\n" +
         pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.mounts") + "@@pathwarden mountstats\n" +
         pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.mountstats") + "@@pathwarden netdev\n" +
         pw::testing::guest_sample("local/proc-net-dev-netns.txt") + "@@pathwarden nfs_servers\n" +
         pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.nfs_servers") + "@@pathwarden nfs_connections\n" +
         pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.ss") +
         "@@pathwarden iface link2\nifindex 3\naddress 52:54:00:00:00:02\nspeed -1\noperstate up\n"
         "rx_queues 2\ntx_queues 2\n" +
         pw::testing::guest_sample("lab-kernel-nfs/ethtool-l-virtio-link2.txt") +
         "@@pathwarden iface lo\nifindex 1\naddress 00:00:00:00:00:00\nspeed \noperstate unknown\n"
         "rx_queues 1\ntx_queues 1\n"
         "@@pathwarden end\n";
}

}  // namespace

TEST_CASE("a guest report becomes GuestFacts") {
  std::string fstab = "UUID=abc / ext4 defaults 0 1\n192.0.2.2:/export /mnt/a nfs vers=4.2,nconnect=4 0 0\n";
  auto facts = parse_guest_report(lab_report(), fstab, "vm101");
  if (!facts) FAIL(facts.error().to_string());
  CHECK(facts->host == "vm101");
  CHECK(facts->boot_id == "3f1c2d4e-0000-4000-8000-000000000001");
  CHECK(facts->fstab_content == fstab);
  CHECK(facts->fstab_sha256 == sha256_hex(fstab));
  CHECK(facts->fstab.entry_for("/mnt/a").has_value());
  CHECK(facts->mounts.size() == 2);
  CHECK(facts->mount_stats.size() == 2);
  CHECK(facts->mount_stats[0].transports.size() == 4);
  CHECK(facts->counters.size() == 3);
  CHECK(facts->nfs_connections.size() == 4);
  CHECK(facts->nfs_servers.size() == 1);
  REQUIRE(facts->interfaces.size() == 2);
  CHECK(facts->interfaces[0].name == "link2");
  CHECK(facts->interfaces[0].combined_max() == 4);
  CHECK(facts->interfaces[1].name == "lo");
  CHECK_FALSE(facts->interfaces[1].channels);
}

TEST_CASE("an incomplete or broken report is an error naming the guest") {
  auto report = lab_report();
  auto cut = report.substr(0, report.find("@@pathwarden end"));
  auto r = parse_guest_report(cut, "", "vm101");
  REQUIRE_FALSE(r);
  CHECK(r.error().where == "vm101");
  CHECK(r.error().what.find("incomplete") != std::string::npos);

  auto broken = parse_guest_report("@@pathwarden netdev\n eth0: 1 2\n@@pathwarden end\n", "", "vm102");
  REQUIRE_FALSE(broken);
  CHECK(broken.error().where == "vm102:/proc/net/dev:1:1");
}

TEST_CASE("the facts script is plain sh without template syntax") {
  auto script = guest_report_script();
  CHECK(script.find("{{") == std::string_view::npos);
  CHECK(script.find("{%") == std::string_view::npos);
  CHECK(script.find("{#") == std::string_view::npos);
  CHECK(script.find("@@pathwarden %s") != std::string_view::npos);
}

TEST_CASE("getent ahosts: each address once, in the resolver's order") {
  // glibc 2.36 (bookworm) for a name with two addresses in /etc/hosts.
  const std::string out =
      "198.51.100.2    STREAM nas.lan\n198.51.100.2    DGRAM  \n198.51.100.2    RAW    \n"
      "192.0.2.2       STREAM \n192.0.2.2       DGRAM  \n192.0.2.2       RAW    \n";
  CHECK(pw::guest::parse_getent_ahosts(out) == std::vector<std::string>{"198.51.100.2", "192.0.2.2"});
  CHECK(pw::guest::parse_getent_ahosts("").empty());
}
