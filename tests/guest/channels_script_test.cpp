// SPDX-License-Identifier: GPL-3.0-or-later
// The channels script, run for real by this machine's /bin/sh as the raw task runs it, with a
// stand-in `ethtool` first in PATH that prints a real `ethtool -l` sample and records each
// `ethtool -L`: a set always asks for the count, a rollback's restore only where it moved.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "guest/ethtool.hpp"
#include "guest/tokens.hpp"
#include "temp_dir.hpp"
#include "text_files.hpp"

using namespace pw::guest;
namespace fs = std::filesystem;

namespace {

const fs::path kSamples = fs::path(PW_TEST_DATA_DIR) / "guest" / "samples";

struct Outcome {
  int status = -1;
  std::string calls;  // one line per `ethtool -L`: its arguments
  std::string output;
};

// `listing`: the sample `ethtool -l` prints (empty: it fails as on a NIC without channel
// parameters, "Operation not supported").
// `no_ethtool`: a guest without ethtool (no stub; this host's lives in /usr/sbin, off the PATH).
Outcome run(const std::string& interface, const std::string& count, const std::string& mode, const fs::path& listing,
            bool no_ethtool = false) {
  pw::testing::TempDir d("pw-channels");
  const auto bin = d.path() / "bin";
  fs::create_directories(bin);
  if (!no_ethtool) {
    std::ofstream stub(bin / "ethtool");
    stub << "#!/bin/sh\n"
         << "case $1 in\n"
         << "  -l) "
         << (listing.empty() ? "echo 'netlink error: Operation not supported' >&2; exit 95"
                             : "cat " + shell_quote(listing.string()))
         << " ;;\n"
         << "  -L) shift; echo \"$*\" >>" << shell_quote((d.path() / "calls").string()) << "; exit 0 ;;\n"
         << "esac\n";
  }
  if (!no_ethtool) fs::permissions(bin / "ethtool", fs::perms::owner_all);
  std::string command = "PATH=" + shell_quote(bin.string()) + ":/usr/bin:/bin /bin/sh -c " +
                        shell_quote(std::string(set_channels_script())) + " sh " + shell_quote(interface) + " " +
                        shell_quote(count) + (mode.empty() ? "" : " " + shell_quote(mode));
  Outcome o;
  const int status = std::system((command + " >" + (d.path() / "out").string() + " 2>&1").c_str());
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.calls = pw::testing::whole_file_or_empty(d.path() / "calls");  // no call made: no file
  o.output = pw::testing::whole_file(d.path() / "out");
  return o;
}

}  // namespace

// `lo` stands for the guest's NIC: the script checks only that /sys/class/net/IF exists.
TEST_CASE("a set always runs ethtool -L, even at the count it asks for") {
  const auto virtio = kSamples / "lab-kernel-nfs" / "ethtool-l-virtio-link1.txt";  // current 2 of max 4
  auto o = run("lo", "2", "set", virtio);
  CHECK(o.status == 0);
  CHECK(o.calls == "lo combined 2\n");
  // The playbooks of earlier releases pass two arguments: the same as a set.
  o = run("lo", "4", "", virtio);
  CHECK(o.calls == "lo combined 4\n");
}

TEST_CASE("a restore puts the count back only where it moved") {
  const auto virtio = kSamples / "lab-kernel-nfs" / "ethtool-l-virtio-link1.txt";
  SECTION("current 2, restoring 4: ethtool -L") {
    auto o = run("lo", "4", "restore", virtio);
    CHECK(o.status == 0);
    CHECK(o.calls == "lo combined 4\n");
  }
  SECTION("current 2, restoring 2 (the forward ethtool -L failed): nothing, not the maximum's 4") {
    auto o = run("lo", "2", "restore", virtio);
    CHECK(o.status == 0);
    CHECK(o.calls.empty());
    CHECK(o.output.find("combined channels are 2: nothing to restore") != std::string::npos);
  }
  SECTION("a veth (Combined n/a): nothing") {
    auto o = run("lo", "1", "restore", kSamples / "local" / "ethtool-l-veth.txt");
    CHECK(o.status == 0);
    CHECK(o.calls.empty());
  }
  SECTION("no channel parameters at all (ethtool -l fails): nothing") {
    auto o = run("lo", "1", "restore", {});
    CHECK(o.status == 0);
    CHECK(o.calls.empty());
  }
  SECTION("a NIC that is gone: ethtool -L runs and reports it") {
    auto o = run("pwnosuch0", "2", "restore", virtio);
    CHECK(o.calls == "pwnosuch0 combined 2\n");
  }
}

TEST_CASE("channels that cannot be set: a set changes nothing and says so with its own exit status") {
  SECTION("a veth (Combined n/a)") {
    auto o = run("lo", "2", "set", kSamples / "local" / "ethtool-l-veth.txt");
    CHECK(o.status == kChannelsUntouchedExit);
    CHECK(o.calls.empty());
    CHECK(o.output.find("cannot set the combined channels of lo (Combined: n/a): nothing changed") !=
          std::string::npos);
    o = run("lo", "1", "restore", kSamples / "local" / "ethtool-l-veth.txt");
    CHECK(o.status == 0);
    CHECK(o.calls.empty());
  }
  SECTION("no channel parameters at all: ethtool's own words") {
    auto o = run("lo", "2", "set", {});
    CHECK(o.status == kChannelsUntouchedExit);
    CHECK(o.calls.empty());
    CHECK(o.output.find("(ethtool -l: netlink error: Operation not supported): nothing changed") != std::string::npos);
  }
  SECTION("a guest without ethtool: said so; its rollback has nothing to undo") {
    auto o = run("lo", "2", "set", {}, true);
    CHECK(o.status == kChannelsUntouchedExit);
    CHECK(o.output.find("cannot set the combined channels of lo (no ethtool on the guest's PATH): nothing changed") !=
          std::string::npos);
    o = run("lo", "2", "restore", {}, true);
    CHECK(o.status == 0);
  }
}

TEST_CASE("the channels script's untouched exit is the one the engine reads") {
  // src/guest/scripts/channels.sh names it once, at its top; guest::kChannelsUntouchedExit must agree.
  CHECK(pw::guest::set_channels_script().find("\nuntouched=" + std::to_string(pw::guest::kChannelsUntouchedExit) +
                                              "\n") != std::string_view::npos);
}
