// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/facts.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "guest/script_output.hpp"
#include "guest/scripts.hpp"
#include "guest/sha256.hpp"
#include "text_files.hpp"

namespace fs = std::filesystem;
using namespace pw::guest;

namespace {

constexpr std::string_view kToken = "6b1f0e2d-9c8a-4b7d-a6e5-f4d3c2b1a098";
const std::string kFstab = "UUID=abc / ext4 defaults 0 1\n192.0.2.2:/export /mnt/a nfs vers=4.2,nconnect=4 0 0\n";

std::string base64_of(std::string_view bytes) {
  return pw::testing::base64(bytes) + "\n";
}

// A report assembled from the lab VM's real outputs, in the layout the facts script prints.
std::vector<std::pair<std::string, std::string>> lab_sections(const std::string& mounts_extra = {}) {
  return {{"fstab", base64_of(kFstab)},
          {"boot_id", "3f1c2d4e-0000-4000-8000-000000000001\n"},
          {"mounts", pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.mounts") + mounts_extra},
          {"mountstats", pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.mountstats")},
          {"netdev", pw::testing::guest_sample("local/proc-net-dev-netns.txt")},
          {"nfs_servers", pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.nfs_servers")},
          {"nfs_connections", pw::testing::guest_sample("lab-kernel-nfs/knfsd-nconnect4.ss")},
          {"iface link2", "ifindex 3\naddress 52:54:00:00:00:02\nspeed -1\noperstate up\nrx_queues 2\ntx_queues 2\n" +
                              pw::testing::guest_sample("lab-kernel-nfs/ethtool-l-virtio-link2.txt")},
          {"iface lo", "ifindex 1\naddress 00:00:00:00:00:00\nspeed \noperstate unknown\nrx_queues 1\ntx_queues 1\n"}};
}

std::string lab_report() {
  return framed_output(kToken, lab_sections());
}

}  // namespace

TEST_CASE("a guest report becomes GuestFacts") {
  auto facts = parse_guest_report(lab_report(), "vm101");
  if (!facts) FAIL(facts.error().to_string());
  CHECK(facts->host == "vm101");
  CHECK(facts->boot_id == "3f1c2d4e-0000-4000-8000-000000000001");
  CHECK(facts->fstab_content == kFstab);
  CHECK(facts->fstab_sha256 == sha256_hex(kFstab));
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

TEST_CASE("guest output cannot steer the reader: chatter first, forged marks, oversized sections") {
  // A login shell that greets (an echo in .bashrc) before the script starts: ignored.
  auto greeted = parse_guest_report("Welcome to media-vm!\n@@pathwarden fstab\nbogus\n" + lab_report(), "vm101");
  REQUIRE(greeted);
  CHECK(greeted->fstab_content == kFstab);
  // A FUSE mount any user may name "@@pathwarden end" (or anything with the old fixed mark): in
  // /proc/mounts it is a line of content, and the mounts after it are still seen.
  const std::string forged =
      "@@pathwarden /home/eve/x fuse.sshfs rw,nosuid,nodev 0 0\n"
      "@@pathwarden end fuse rw 0 0\n"
      "tmpfs /mnt/after-forged tmpfs rw 0 0\n";
  auto facts = parse_guest_report(framed_output(kToken, lab_sections(forged)), "vm101");
  REQUIRE(facts);
  CHECK(facts->mounts.size() == 5);
  CHECK(facts->mounts.back().mount_point == "/mnt/after-forged");
  CHECK(facts->boot_id == "3f1c2d4e-0000-4000-8000-000000000001");
  // Another run's token is content too: only this run's marks count.
  auto other = framed_output("00000000-0000-4000-8000-000000000000", {{"mounts", "x"}});
  auto mixed = parse_guest_report(framed_output(kToken, lab_sections(other)), "vm101");
  REQUIRE_FALSE(mixed);  // its lines are not mount lines: /proc/mounts' reader says so
  CHECK(mixed.error().where.starts_with("vm101:/proc/mounts"));
  // No begin line: the script never started; a bad token: refused.
  auto none = parse_guest_report("@@pathwarden fstab\n@@pathwarden end\n", "vm101");
  REQUIRE_FALSE(none);
  CHECK(none.error().what.find("no begin mark") != std::string::npos);
  CHECK_FALSE(parse_guest_report("@@pathwarden begin x'y\n", "vm101"));
  // A section over its cap is refused, not read in part (a cut /proc/mounts would look like
  // unmounted shares).
  auto big = split_script_output(framed_output(kToken, {{"mounts", std::string(2000, 'x') + "\n"}}), "facts report",
                                 "vm101", 1024);
  REQUIRE_FALSE(big);
  CHECK(big.error().what.find("section 'mounts'") != std::string::npos);
}

TEST_CASE("an incomplete or broken report is an error naming the guest") {
  auto report = lab_report();
  auto cut = report.substr(0, report.find("@@" + std::string(kToken) + " end"));
  auto r = parse_guest_report(cut, "vm101");
  REQUIRE_FALSE(r);
  CHECK(r.error().where == "vm101");
  CHECK(r.error().what.find("incomplete") != std::string::npos);

  auto broken = parse_guest_report(framed_output(kToken, {{"fstab", ""}, {"netdev", " eth0: 1 2\n"}}), "vm102");
  REQUIRE_FALSE(broken);
  CHECK(broken.error().where == "vm102:/proc/net/dev:1:1");
  auto no_fstab = parse_guest_report(framed_output(kToken, {{"netdev", ""}}), "vm102");
  REQUIRE_FALSE(no_fstab);
  CHECK(no_fstab.error().what == "the facts report has no fstab section");
}

TEST_CASE("the facts script is plain sh without template syntax") {
  auto script = guest_report_script();
  CHECK(script.find("{{") == std::string_view::npos);
  CHECK(script.find("{%") == std::string_view::npos);
  CHECK(script.find("{#") == std::string_view::npos);
  CHECK(script.starts_with(std::string("set -u\n") + std::string(scripts::marks)));
}

TEST_CASE("getent ahosts: each address once, in the resolver's order") {
  // glibc 2.36 (bookworm) for a name with two addresses in /etc/hosts.
  const std::string out =
      "198.51.100.2    STREAM nas.lan\n198.51.100.2    DGRAM  \n198.51.100.2    RAW    \n"
      "192.0.2.2       STREAM \n192.0.2.2       DGRAM  \n192.0.2.2       RAW    \n";
  CHECK(pw::guest::parse_getent_ahosts(out) == std::vector<std::string>{"198.51.100.2", "192.0.2.2"});
  CHECK(pw::guest::parse_getent_ahosts("").empty());
}
