// SPDX-License-Identifier: GPL-3.0-or-later
// The probe script, run for real by this machine's /bin/sh on files of the test's own, and its
// output read back: what the probe playbook's one task does in each guest.
#include "guest/probe_report.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "guest/counters.hpp"
#include "guest/dd_summary.hpp"
#include "guest/tokens.hpp"
#include "text_files.hpp"

using namespace pw::guest;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path = fs::temp_directory_path() / ("pw-probe-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

// Runs the script as the raw task does: /bin/sh -c SCRIPT sh ARGS...
std::string run_script(const Dir& d, const ProbeScriptArgs& args) {
  std::string command = "/bin/sh -c " + shell_quote(std::string(probe_script())) + " sh";
  for (const auto& a : probe_script_argv(args)) command += " " + shell_quote(a);
  const auto out = d.path / "out";
  REQUIRE(std::system((command + " >" + out.string() + " 2>&1").c_str()) == 0);
  return pw::testing::whole_file(out);
}

void write_bytes(const fs::path& p, std::size_t n) {
  std::ofstream(p, std::ios::binary) << std::string(n, 'x');
}

}  // namespace

TEST_CASE("the probe script reads the counters around dd and times it by the guest's clock") {
  Dir d;
  write_bytes(d.path / "probe.bin", 1 << 20);
  ProbeScriptArgs args;
  args.dd_argv = {"dd", "if=" + (d.path / "probe.bin").string(), "of=/dev/null", "bs=65536", "count=16"};
  const auto text = run_script(d, args);
  INFO(text);
  auto r = parse_probe_report(text, "vm101");
  REQUIRE(r);
  CHECK_FALSE(r->baseline);
  CHECK(find_counters(r->before.read.counters, "lo"));
  CHECK(r->before.read.ifindex.at("lo") == 1);
  CHECK(r->after.at >= r->before.at);
  CHECK(r->probe_seconds >= 0);
  CHECK(r->after.at - r->before.at >= r->probe_seconds);  // the window holds the dd
  CHECK(r->probe.rc == 0);
  auto dd = parse_dd_summary(r->probe.stderr_text);
  REQUIRE(dd);
  CHECK(dd->bytes == 1u << 20);
  CHECK_FALSE(r->commit);
}

TEST_CASE("the probe script's baseline, write probe and commit cycles: only the files it made go") {
  Dir d;
  const auto written = d.path / "probe-new.bin";
  const auto commit = d.path / "commit.bin";
  ProbeScriptArgs args;
  args.baseline_seconds = 0.2;
  args.remove_after = written.string();
  args.commit_cycles = 4;
  args.commit_path = commit.string();
  args.dd_argv = {"dd", "if=/dev/zero", "of=" + written.string(), "bs=4096", "count=8", "conv=fsync,excl"};
  auto r = parse_probe_report(run_script(d, args), "vm101");
  REQUIRE(r);
  REQUIRE(r->baseline);
  // The baseline read comes first, then the "before" read (their distance is the sleep: a
  // duration, which no test asserts; the verifier reads it from the guest's clock).
  CHECK(r->before.at >= r->baseline->at);
  CHECK(r->after.at >= r->before.at);
  CHECK(r->probe.rc == 0);
  CHECK(parse_dd_summary(r->probe.stderr_text)->bytes == 8u * 4096);
  REQUIRE(r->commit);
  CHECK(r->commit->rc == 0);
  CHECK(parse_dd_summary(r->commit->stderr_text)->bytes == 4u * 8192);
  CHECK_FALSE(fs::exists(written));  // both its own: removed
  CHECK_FALSE(fs::exists(commit));

  // Names already taken: dd refuses (conv=excl), the script says so and leaves both files be.
  write_bytes(written, 3);
  write_bytes(commit, 5);
  auto taken = parse_probe_report(run_script(d, args), "vm101");
  REQUIRE(taken);
  CHECK(taken->probe.rc != 0);
  CHECK(taken->probe.stderr_text.find("File exists") != std::string::npos);
  CHECK(taken->commit->stderr_text.find("File exists") != std::string::npos);
  CHECK(fs::file_size(written) == 3);
  CHECK(fs::file_size(commit) == 5);
}

TEST_CASE("a dd that fails is the verifier's to judge: the script still reads the counters after") {
  Dir d;
  ProbeScriptArgs args;
  args.dd_argv = {"dd", "if=" + (d.path / "missing").string(), "of=/dev/null", "bs=4096", "count=1"};
  auto r = parse_probe_report(run_script(d, args), "vm101");
  REQUIRE(r);
  CHECK(r->probe.rc != 0);
  CHECK(r->probe.stderr_text.find("No such file or directory") != std::string::npos);
  CHECK(find_counters(r->after.read.counters, "lo"));
}

TEST_CASE("the probe file is refused by name when it is not a regular file reached without links") {
  Dir d;
  const auto share = d.path / "share";
  fs::create_directories(share / "real");
  write_bytes(share / "real" / "probe.bin", 1 << 16);
  auto probe_of = [&](const fs::path& file, ProbeDirection direction = ProbeDirection::read) {
    ProbeScriptArgs args;
    args.direction = direction;
    args.mount_point = share.string();
    args.file = file.string();
    args.dd_argv =
        direction == ProbeDirection::read
            ? std::vector<std::string>{"dd",      "if=" + file.string(),    "of=/dev/null", "bs=4096",
                                       "count=4", "iflag=nofollow,nonblock"}
            : std::vector<std::string>{
                  "dd", "if=/dev/zero", "of=" + file.string(), "bs=4096", "count=1", "oflag=nofollow", "conv=excl"};
    if (direction == ProbeDirection::write) args.remove_after = file.string();
    auto r = parse_probe_report(run_script(d, args), "vm101");
    REQUIRE(r);
    return *r;
  };
  CHECK_FALSE(probe_of(share / "real" / "probe.bin").refused);
  // A FIFO would block dd's open until the task's limit: refused at once, nothing read.
  REQUIRE(::mkfifo((share / "fifo").c_str(), 0644) == 0);
  auto fifo = probe_of(share / "fifo");
  REQUIRE(fifo.refused);
  CHECK(fifo.refused->kind == "fifo");
  CHECK(fifo.refused->message == (share / "fifo").string() + " is a FIFO (named pipe), not a regular file");
  // A device, a directory, a link as the file or anywhere below the mount point.
  fs::create_symlink("/dev/zero", share / "dev");
  CHECK(probe_of(share / "dev").refused->kind == "link");
  fs::create_directory_symlink(share / "real", share / "via");
  auto via = probe_of(share / "via" / "probe.bin");
  REQUIRE(via.refused);
  CHECK(via.refused->message == (share / "via").string() + " is a symbolic link");
  CHECK(probe_of(share / "real").refused->kind == "directory");
  // A write probe through a linked directory is refused too; nothing is created behind it.
  CHECK(probe_of(share / "via" / "new.bin", ProbeDirection::write).refused->kind == "link");
  CHECK_FALSE(fs::exists(share / "real" / "new.bin"));
  // A write probe to a new file still runs, and removes only its own file.
  auto wrote = probe_of(share / "real" / "new.bin", ProbeDirection::write);
  CHECK_FALSE(wrote.refused);
  CHECK(wrote.probe.rc == 0);
  CHECK_FALSE(fs::exists(share / "real" / "new.bin"));
}

TEST_CASE("probe reports cut short or garbled are errors, never figures") {
  const std::string netdev =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier "
      "compressed\n"
      "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n";
  const std::string t = "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d", m = "@@" + t + " ";
  const std::string read_tail = m + "ifindex\neth0 2\n" + m + "nfs_connections\n";
  const std::string whole = "Welcome to the guest\n@@pathwarden begin " + t + "\n" + m + "read before 10.50\n" +
                            netdev + read_tail + m + "read after 12.75\n" + netdev + read_tail + m +
                            "probe 0 10.60 12.70\nsummary\n" + m + "end\n";
  auto r = parse_probe_report(whole, "vm101");
  REQUIRE(r);
  CHECK(r->after.at - r->before.at == Approx(2.25));
  CHECK(r->probe_seconds == Approx(2.10));
  CHECK(r->probe.stderr_text == "summary");
  auto without = [&](std::string_view cut) {
    auto out = whole;
    out.erase(out.find(cut), cut.size());
    return out;
  };
  CHECK_FALSE(parse_probe_report(without(m + "end\n"), "vm101"));  // cut short
  CHECK_FALSE(parse_probe_report(without(m + "probe 0 10.60 12.70\nsummary\n"), "vm101"));
  CHECK_FALSE(parse_probe_report(without(m + "ifindex\neth0 2\n"), "vm101"));
  // dd's message may hold the file's name, which anyone who can write the share picks: a name
  // with a newline and the old fixed mark is content.
  auto named = whole;
  named.replace(named.find("summary"), 7, "dd: '/mnt/x\n@@pathwarden end\n@@pathwarden probe 0 1 2': error");
  auto n = parse_probe_report(named, "vm101");
  REQUIRE(n);
  CHECK(n->probe.stderr_text.find("@@pathwarden end") != std::string::npos);
  auto bad_clock = whole;
  bad_clock.replace(bad_clock.find("12.75"), 5, "nan");
  CHECK_FALSE(parse_probe_report(bad_clock, "vm101"));
  auto bad_rc = whole;
  bad_rc.replace(bad_rc.find("probe 0"), 7, "probe x");
  auto e = parse_probe_report(bad_rc, "vm101");
  REQUIRE_FALSE(e);
  CHECK(e.error().where == "vm101");
}
