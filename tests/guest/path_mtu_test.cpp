// SPDX-License-Identifier: GPL-3.0-or-later
// The path-MTU probe (guest/path_mtu.hpp): its section parsed and classified, and the facts
// script's pmtu part run for real by this machine's /bin/sh with stand-in `getent`, `ip` and
// `ping` first in PATH (the route points at lo, whose MTU of 65536 makes the path "jumbo"). The
// stand-in ping answers as iputils' does for a path that carries the size, a black hole, a hop
// that says "fragmentation needed", and a NAS that answers nothing.
#include "guest/path_mtu.hpp"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "guest/facts.hpp"
#include "guest/tokens.hpp"
#include "temp_dir.hpp"
#include "text_files.hpp"

using namespace pw::guest;
namespace fs = std::filesystem;

TEST_CASE("path-MTU sections: every shape facts.sh writes, classified") {
  auto probe = [](std::string_view body) {
    auto p = parse_path_mtu(body, "media-vm:ping");
    if (!p) FAIL(p.error().to_string());
    return *p;
  };
  SECTION("a full-size frame crossed") {
    auto p = probe("route 198.51.100.2 ens19 9000\nping 8972 0 2 -\n");
    CHECK(p.interface == "ens19");
    CHECK(p.mtu == 9000);
    CHECK(classify_path_mtu(p).verdict == PathMtuVerdict::fits);
  }
  SECTION("a black hole: silence at 9000, answers at 1500") {
    auto p = probe("route 198.51.100.2 ens19 9000\nping 8972 1 0 -\nping 1472 0 2 -\n");
    REQUIRE(p.attempts.size() == 2);
    const auto f = classify_path_mtu(p);
    CHECK(f.verdict == PathMtuVerdict::black_hole);
    CHECK(f.mtu == 9000);
  }
  SECTION("a hop that says so") {
    auto p = probe("route 198.51.100.2 ens19 9000\nping 8972 1 0 4000\nping 1472 0 2 -\n");
    const auto f = classify_path_mtu(p);
    CHECK(f.verdict == PathMtuVerdict::smaller_hop);
    CHECK(f.hop_mtu == 4000);
  }
  SECTION("nothing answers at either size: not an MTU finding") {
    CHECK(classify_path_mtu(probe("route 198.51.100.2 ens19 9000\nping 8972 1 0 -\nping 1472 1 0 -\n")).verdict ==
          PathMtuVerdict::unanswered);
  }
  SECTION("not measured") {
    CHECK(classify_path_mtu(probe("route 198.51.100.2 ens19 1500\nnojumbo\n")).verdict == PathMtuVerdict::fits);
    CHECK(classify_path_mtu(probe("route 198.51.100.2 ens19 9000\nnoping\n")).verdict == PathMtuVerdict::unknown);
    CHECK(classify_path_mtu(probe("unresolved\n")).verdict == PathMtuVerdict::unknown);
    CHECK(classify_path_mtu(probe("noroute 198.51.100.2\n")).verdict == PathMtuVerdict::unknown);
  }
  SECTION("what facts.sh never writes is an error naming the line, never a crash") {
    for (const char* bad : {"route 198.51.100.2 ens19\n", "ping 8972 x 0 -\n", "ping 8972 1 0 mtu\n",
                            "route 198.51.100.2 ens19 9000\n", "hello\n"}) {
      INFO(bad);
      auto p = parse_path_mtu(bad, "media-vm:ping");
      REQUIRE_FALSE(p);
      CHECK_THAT(p.error().where, Catch::StartsWith("media-vm:ping"));
    }
  }
}

TEST_CASE("path-MTU targets: host names and IP literals, never an option") {
  CHECK(is_path_mtu_target("198.51.100.2"));
  CHECK(is_path_mtu_target("nas-10g.lab.example"));
  CHECK(is_path_mtu_target("2001:db8::2"));
  CHECK_FALSE(is_path_mtu_target("-W100"));
  CHECK_FALSE(is_path_mtu_target("nas;reboot"));
  CHECK_FALSE(is_path_mtu_target(""));
  auto args = facts_arguments(std::vector<std::string>{"nas-10g.lab.example"},
                              std::vector<std::string>{"nas-10g.lab.example", "2001:db8::2"});
  REQUIRE(args);
  CHECK(*args == std::vector<std::string>{"nas-10g.lab.example", "pmtu=nas-10g.lab.example", "pmtu=2001:db8::2"});
  auto bad = facts_arguments(std::vector<std::string>{}, std::vector<std::string>{"$(reboot)"});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().what, Catch::Contains("'$(reboot)' is neither a host name nor an IP address"));
}

namespace {

// The facts script with stand-ins; `mode` tells the stand-in ping how the path behaves.
GuestFacts run_facts(const std::string& mode, const std::vector<std::string>& args) {
  pw::testing::TempDir dir{"pw-pmtu"};
  const auto bin = dir.path() / "bin";
  fs::create_directories(bin);
  auto tool = [&](const char* name, const std::string& body) {
    std::ofstream(bin / name) << "#!/bin/sh\n" << body;
    fs::permissions(bin / name, fs::perms::owner_all);
  };
  tool("getent", "case $2 in nas.test|198.51.100.2) echo '198.51.100.2    STREAM nas.test' ;; esac\n");
  // The route to the NAS leaves by lo (MTU 65536 in every namespace); the rest is the real ip.
  tool("ip",
       "if [ \"$1 $2 $3\" = '-o route get' ]; then echo \"$4 dev lo src 127.0.0.1 uid 0\"; exit 0; fi\n"
       "for d in /usr/sbin /sbin /usr/bin /bin; do [ -x $d/ip ] && exec $d/ip \"$@\"; done\nexit 1\n");
  tool("ping",
       "size=; while [ $# -gt 0 ]; do [ \"$1\" = -s ] && size=$2; shift; done\n"
       "case " +
           mode +
           ":$size in\n"
           "  fits:*|blackhole:1472) echo '2 packets transmitted, 2 received, 0% packet loss'; exit 0 ;;\n"
           "  frag:65508) echo 'From 198.51.100.1 icmp_seq=1 Frag needed and DF set (mtu = 9000)';"
           " echo '2 packets transmitted, 0 received, +2 errors, 100% packet loss'; exit 1 ;;\n"
           "  frag:1472) echo '2 packets transmitted, 2 received, 0% packet loss'; exit 0 ;;\n"
           "  *) echo '2 packets transmitted, 0 received, 100% packet loss'; exit 1 ;;\n"
           "esac\n");
  std::ofstream(dir.path() / "fstab") << "# empty\n";
  std::string command = "PATH=" + shell_quote(bin.string()) + ":/usr/bin:/bin /bin/sh -c " +
                        shell_quote(std::string(guest_report_script())) + " sh " +
                        shell_quote((dir.path() / "fstab").string());
  for (const auto& a : args) command += " " + shell_quote(a);
  const int status = std::system((command + " >" + (dir.path() / "out").string() + " 2>/dev/null").c_str());
  REQUIRE(WIFEXITED(status));
  auto facts = parse_guest_report(pw::testing::whole_file(dir.path() / "out"), "media-vm");
  if (!facts) FAIL(facts.error().to_string());
  return *facts;
}

}  // namespace

TEST_CASE("facts.sh measures the path MTU with don't-fragment pings, and only what it is asked") {
  SECTION("a black hole: the interface's MTU, then 1500") {
    auto f = run_facts("blackhole", {"nas.test", "pmtu=nas.test"});
    REQUIRE(f.path_mtu.count("nas.test") == 1);
    const auto& p = f.path_mtu.at("nas.test");
    CHECK(p.address == "198.51.100.2");
    CHECK(p.interface == "lo");
    CHECK(p.mtu == 65536);
    REQUIRE(p.attempts.size() == 2);
    CHECK(p.attempts[0].payload == 65536 - 28);
    CHECK(p.attempts[1].payload == 1472);
    CHECK(classify_path_mtu(p).verdict == PathMtuVerdict::black_hole);
    // The name is still resolved for the mount; the probe argument is not a name.
    CHECK(f.resolved.count("nas.test") == 1);
    CHECK(f.resolved.count("pmtu=nas.test") == 0);
  }
  SECTION("a path that carries it: one ping") {
    auto f = run_facts("fits", {"pmtu=198.51.100.2"});
    const auto& p = f.path_mtu.at("198.51.100.2");
    CHECK(p.attempts.size() == 1);
    CHECK(classify_path_mtu(p).verdict == PathMtuVerdict::fits);
  }
  SECTION("a hop that says how much it carries") {
    const auto f = run_facts("frag", {"pmtu=nas.test"});
    const auto found = classify_path_mtu(f.path_mtu.at("nas.test"));
    CHECK(found.verdict == PathMtuVerdict::smaller_hop);
    CHECK(found.hop_mtu == 9000);
  }
  SECTION("silence at both sizes, and a name that does not resolve") {
    auto f = run_facts("silent", {"pmtu=nas.test", "pmtu=gone.test"});
    CHECK(classify_path_mtu(f.path_mtu.at("nas.test")).verdict == PathMtuVerdict::unanswered);
    CHECK(f.path_mtu.at("gone.test").outcome == PathMtuProbe::Outcome::unresolved);
  }
  SECTION("not asked: no section") {
    CHECK(run_facts("fits", {}).path_mtu.empty());
  }
}
