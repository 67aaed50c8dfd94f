// The probe script, run for real by this machine's /bin/sh on files of the test's own, and its
// output read back: what the probe playbook's one task does in each guest.
#include "guest/probe_report.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "guest/counters.hpp"
#include "guest/dd_summary.hpp"
#include "guest/tokens.hpp"

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
  std::ifstream in(out);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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
  // It slept the baseline between the two reads. The times are decimal seconds made doubles: a
  // difference of exactly 0.2 may come out a hair under it (CI saw "0.2 >= 0.2" fail).
  CHECK(r->before.at - r->baseline->at >= 0.2 - 1e-6);
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

TEST_CASE("probe reports cut short or garbled are errors, never figures") {
  const std::string netdev =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier "
      "compressed\n"
      "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n";
  const std::string whole = "Welcome to the guest\n@@pathwarden read before 10.50\n" + netdev +
                            "@@pathwarden read after 12.75\n" + netdev + "@@pathwarden probe 0 10.60 12.70\nsummary\n" +
                            "@@pathwarden end\n";
  auto r = parse_probe_report(whole, "vm101");
  REQUIRE(r);
  CHECK(r->after.at - r->before.at == Approx(2.25));
  CHECK(r->probe_seconds == Approx(2.10));
  CHECK(r->probe.stderr_text == "summary");
  auto without = [&](std::string_view cut) {
    auto t = whole;
    t.erase(t.find(cut), cut.size());
    return t;
  };
  CHECK_FALSE(parse_probe_report(without("@@pathwarden end\n"), "vm101"));  // cut short
  CHECK_FALSE(parse_probe_report(without("@@pathwarden probe 0 10.60 12.70\nsummary\n"), "vm101"));
  auto bad_clock = whole;
  bad_clock.replace(bad_clock.find("12.75"), 5, "nan");
  CHECK_FALSE(parse_probe_report(bad_clock, "vm101"));
  auto bad_rc = whole;
  bad_rc.replace(bad_rc.find("probe 0"), 7, "probe x");
  auto e = parse_probe_report(bad_rc, "vm101");
  REQUIRE_FALSE(e);
  CHECK(e.error().where == "vm101");
}
