// SPDX-License-Identifier: GPL-3.0-or-later
// The transport script (spec.mount.trunking: move-transport), run for real by this machine's
// /bin/sh as the raw task runs it, against a sunrpc sysfs tree of plain files laid out as Linux
// 6.1 lays it out (switch-M/xprt-N-tcp/{dstaddr,xprt_info,xprt_state,srcaddr}) and a mounts file
// in /proc/mounts' format. A stand-in `stat` first in PATH answers the script's one RPC (statfs).
// The kernel validates nothing written to dstaddr, so every refusal here is one it would not make.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "guest/tokens.hpp"
#include "guest/transport_move.hpp"
#include "temp_dir.hpp"
#include "text_files.hpp"

using namespace pw::guest;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTrunkedMounts =
    "192.0.2.2:/volume1/backup /mnt/backup nfs4 rw,vers=4.2,nconnect=2,addr=192.0.2.2 0 0\n"
    "198.51.100.2:/volume1/movies /mnt/movies nfs4 rw,vers=4.2,nconnect=2,addr=192.0.2.2 0 0\n"
    "192.0.2.2:/volume1/old /mnt/old nfs rw,vers=3,addr=192.0.2.2 0 0\n";

struct Lab {
  pw::testing::TempDir dir{"pw-transport"};
  fs::path sunrpc() const { return dir.path() / "xprt-switches"; }

  void xprt(const std::string& sw, const std::string& name, const std::string& dst, bool main, int port,
            const std::string& state = "state= CONNECTED   BOUND") const {
    const auto d = sunrpc() / sw / name;
    fs::create_directories(d);
    std::ofstream(d / "dstaddr") << dst << "\n";
    std::ofstream(d / "xprt_info") << "last_used=4294902071\ncur_cong=0\nmain_xprt=" << (main ? 1 : 0)
                                   << "\nsrc_port=864\ntasks_queuelen=0\ndst_port=" << port << "\n";
    std::ofstream(d / "xprt_state") << state << "\n";
    std::ofstream(d / "srcaddr") << "198.51.100.10\n";
  }
  std::string dstaddr(const std::string& sw, const std::string& name) const {
    auto text = pw::testing::whole_file(sunrpc() / sw / name / "dstaddr");
    return text.substr(0, text.find('\n'));
  }
  // The v4.2 client (two transports, nconnect=2) at 192.0.2.2 that /mnt/movies trunked onto,
  // and a v3 client at the same address on switch-0 (its transport to 2049 is not a main one
  // of a v4 client, but is main of its own: the script must tell them apart by what it is asked).
  void trunked() const {
    xprt("switch-1", "xprt-1-tcp", "192.0.2.2", true, 2049);
    xprt("switch-1", "xprt-2-tcp", "192.0.2.2", false, 2049);
    xprt("switch-2", "xprt-3-tcp", "192.0.2.2", true, 20048);  // mountd's client: another port
  }

  struct Outcome {
    int status = -1;
    std::string output;
  };
  Outcome run(const std::string& mounts, const std::vector<std::string>& args, bool statfs_answers = true) const {
    const auto bin = dir.path() / "bin";
    fs::create_directories(bin);
    std::ofstream(bin / "stat") << "#!/bin/sh\nexit " << (statfs_answers ? 0 : 1) << "\n";
    fs::permissions(bin / "stat", fs::perms::owner_all);
    std::ofstream(dir.path() / "mounts") << mounts;
    std::string command = "PATH=" + shell_quote(bin.string()) +
                          ":/usr/bin:/bin PW_SUNRPC_DIR=" + shell_quote(sunrpc().string()) +
                          " PW_PROC_MOUNTS=" + shell_quote((dir.path() / "mounts").string()) + " /bin/sh -c " +
                          shell_quote(std::string(transport_move_script())) + " sh";
    for (const auto& a : args) command += " " + shell_quote(a);
    Outcome o;
    const int status = std::system((command + " >" + (dir.path() / "out").string() + " 2>&1").c_str());
    o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.output = pw::testing::whole_file(dir.path() / "out");
    return o;
  }
};

std::vector<std::string> args(const std::string& mp, const std::string& from, const std::string& to,
                              const std::string& mode = "move", const std::string& mounted_as = "198.51.100.2") {
  auto argv = transport_move_argv({"guest", mp, mounted_as, from, to, mode == "restore"});
  if (argv) return *argv;
  return {mp, mp, mounted_as, from, to, mode};  // what a tampered vars file could still send
}

}  // namespace

TEST_CASE("a trunked mount's client is moved, every TCP transport of it, and moved back by the restore") {
  Lab lab;
  lab.trunked();
  auto o = lab.run(kTrunkedMounts, args("/mnt/movies", "192.0.2.2", "198.51.100.2"));
  INFO(o.output);
  CHECK(o.status == 0);
  CHECK(lab.dstaddr("switch-1", "xprt-1-tcp") == "198.51.100.2");
  CHECK(lab.dstaddr("switch-1", "xprt-2-tcp") == "198.51.100.2");
  CHECK(lab.dstaddr("switch-2", "xprt-3-tcp") == "192.0.2.2");  // not NFS's port: another client
  CHECK(o.output.find("moved xprt-1-tcp of switch-1 from 192.0.2.2 to 198.51.100.2") != std::string::npos);

  // The kernel now shows the main transport's new address as every mount's addr=.
  std::string moved = kTrunkedMounts;
  for (std::size_t at; (at = moved.find("nconnect=2,addr=192.0.2.2")) != std::string::npos;)
    moved.replace(at, 25, "nconnect=2,addr=198.51.100.2");
  auto back = lab.run(moved, args("/mnt/movies", "198.51.100.2", "192.0.2.2", "restore"));
  INFO(back.output);
  CHECK(back.status == 0);
  CHECK(lab.dstaddr("switch-1", "xprt-1-tcp") == "192.0.2.2");
  CHECK(lab.dstaddr("switch-1", "xprt-2-tcp") == "192.0.2.2");
}

TEST_CASE("the transport script refuses, writing nothing, what the kernel would take and break on") {
  Lab lab;
  lab.trunked();
  auto untouched = [&](const Lab::Outcome& o, const std::string& why) {
    INFO(o.output);
    CHECK(o.status == kTransportUntouchedExit);
    CHECK(o.output.find(why) != std::string::npos);
    CHECK(o.output.find("nothing changed") != std::string::npos);
    CHECK(lab.dstaddr("switch-1", "xprt-1-tcp") == "192.0.2.2");
    CHECK(lab.dstaddr("switch-1", "xprt-2-tcp") == "192.0.2.2");
  };
  // An address the kernel would "accept" and leave the transport dead with (rpc_pton fails,
  // addrlen 0): a typo, an IPv6 address, a name.
  untouched(
      lab.run(kTrunkedMounts, {"/mnt/movies", "/mnt/movies", "198.51.100.2", "192.0.2.2", "198.51.100.256", "move"}),
      "is not an IPv4 address");
  untouched(lab.run(kTrunkedMounts, {"/mnt/movies", "/mnt/movies", "198.51.100.2", "192.0.2.2", "2001:db8::2", "move"}),
            "is not an IPv4 address");
  untouched(lab.run(kTrunkedMounts, {"/mnt/movies", "/mnt/movies", "198.51.100.2", "192.0.2.2", "nas.lan", "move"}),
            "is not an IPv4 address");
  // The mount is not the one planned: unmounted, made from another host, riding another client.
  untouched(lab.run(kTrunkedMounts, args("/mnt/nothing", "192.0.2.2", "198.51.100.2")), "is not mounted");
  untouched(lab.run(kTrunkedMounts, args("/mnt/backup", "192.0.2.2", "198.51.100.2")),
            "is mounted from 192.0.2.2, not 198.51.100.2");
  untouched(lab.run(kTrunkedMounts, args("/mnt/movies", "203.0.113.9", "198.51.100.2")),
            "rides 192.0.2.2, not 203.0.113.9");
  untouched(lab.run(kTrunkedMounts, args("/mnt/old", "192.0.2.2", "198.51.100.2", "move", "192.0.2.2")),
            "is a nfs mount, not NFSv4");
  // Two NFS clients at that address (another minor version): which one is the mount's is not told.
  lab.xprt("switch-4", "xprt-7-tcp", "192.0.2.2", true, 2049);
  untouched(lab.run(kTrunkedMounts, args("/mnt/movies", "192.0.2.2", "198.51.100.2")), "several NFS clients");
  fs::remove_all(lab.sunrpc() / "switch-4");
  // A kernel before 5.14: no sunrpc sysfs.
  fs::rename(lab.sunrpc(), lab.dir.path() / "elsewhere");
  auto old_kernel = lab.run(kTrunkedMounts, args("/mnt/movies", "192.0.2.2", "198.51.100.2"));
  CHECK(old_kernel.status == kTransportUntouchedExit);
  CHECK(old_kernel.output.find("Linux 5.14") != std::string::npos);
}

TEST_CASE("a move the new address does not answer is moved back before anything waits on it") {
  Lab lab;
  lab.trunked();
  auto silent = lab.run(kTrunkedMounts, args("/mnt/movies", "192.0.2.2", "198.51.100.2"), false);
  INFO(silent.output);
  CHECK(silent.status == 1);
  CHECK(silent.output.find("did not answer through 198.51.100.2") != std::string::npos);
  CHECK(lab.dstaddr("switch-1", "xprt-1-tcp") == "192.0.2.2");
  CHECK(lab.dstaddr("switch-1", "xprt-2-tcp") == "192.0.2.2");

  lab.xprt("switch-1", "xprt-2-tcp", "192.0.2.2", false, 2049, "state= CONNECTING BOUND");
  auto unconnected = lab.run(kTrunkedMounts, args("/mnt/movies", "192.0.2.2", "198.51.100.2"));
  INFO(unconnected.output);
  CHECK(unconnected.status == 1);
  CHECK(unconnected.output.find("xprt-2-tcp is not connected") != std::string::npos);
  CHECK(lab.dstaddr("switch-1", "xprt-1-tcp") == "192.0.2.2");
}

TEST_CASE("nothing to move: the mount has its own client, or the restore finds it gone") {
  Lab lab;
  lab.trunked();
  const std::string own = "198.51.100.2:/volume1/movies /mnt/movies nfs4 rw,vers=4.2,addr=198.51.100.2 0 0\n";
  auto o = lab.run(own, args("/mnt/movies", "192.0.2.2", "198.51.100.2"));
  CHECK(o.status == 0);
  CHECK(o.output.find("nothing to move") != std::string::npos);
  CHECK(lab.dstaddr("switch-1", "xprt-1-tcp") == "192.0.2.2");
  auto gone = lab.run("", args("/mnt/movies", "198.51.100.2", "192.0.2.2", "restore"));
  CHECK(gone.status == 0);
  CHECK(gone.output.find("not mounted: no transport to move back") != std::string::npos);
}

TEST_CASE("the transport request's arguments are checked before anything is sent") {
  CHECK_FALSE(transport_move_argv({"g", "/mnt/m", "nas", "192.0.2.2", "2001:db8::1", false}));
  CHECK_FALSE(transport_move_argv({"g", "/mnt/m", "nas", "192.0.2.2; reboot", "198.51.100.2", false}));
  CHECK_FALSE(transport_move_argv({"g", "mnt/m", "nas", "192.0.2.2", "198.51.100.2", false}));
  CHECK_FALSE(transport_move_argv({"g", "/mnt/m", "nas:/x", "192.0.2.2", "198.51.100.2", false}));
  auto ok = transport_move_argv({"g", "/mnt/my movies", "nas.lan", "192.0.2.2", "198.51.100.2", true});
  REQUIRE(ok);
  CHECK(*ok == std::vector<std::string>{"/mnt/my movies", "/mnt/my\\040movies", "nas.lan", "192.0.2.2", "198.51.100.2",
                                        "restore"});
}
