// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/playbook_run.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "ansible/phase_results.hpp"
#include "ansible/playbooks.hpp"
#include "ansible/runner.hpp"
#include "guest/script_output.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"

using namespace pw::ansible;
namespace fs = std::filesystem;

namespace {

// Real runs against light guests, saved by test_ansible_light with PW_RECORD_DIR (see README).
const fs::path kRecordings = fs::path(PW_TEST_DATA_DIR) / "ansible" / "recordings";

RecordedRun recording(const std::string& dir, const std::string& phase) {
  auto r = load_recorded_run(kRecordings / dir, phase);
  if (!r) FAIL(r.error().to_string());
  return *r;
}

PlaybookRun replay(const std::string& dir, const std::string& phase, std::vector<std::string> hosts) {
  auto run = recording(dir, phase);
  auto report = read_run(phase, run.jsonl, run.stderr_text, run.exit_code, run.timed_out, hosts);
  if (!report) FAIL(report.error().to_string());
  return *report;
}

const std::vector<std::string> kGuests{"guest1", "guest2", "guest3"};

// What `read` makes of `report` with `t` added to `host`'s tasks; the report is left as it was.
template <class Read>
auto with_task(PlaybookRun& report, const std::string& host, TaskOutcome t, Read read) {
  auto& tasks = report.hosts.at(host).tasks;
  tasks.push_back(std::move(t));
  auto out = read(report);
  tasks.pop_back();
  return out;
}

}  // namespace

TEST_CASE("a recorded facts run gives every guest's facts") {
  auto report = replay("facts", "facts", kGuests);
  CHECK(report.exit_code == 0);
  CHECK(report.complete);
  CHECK(report.succeeded() == kGuests);
  CHECK(report.other_output.empty());
  auto facts = guest_facts_from(report);
  REQUIRE(facts.size() == 3);
  for (const auto& g : kGuests) {
    INFO(g);
    auto& f = facts.at(g);
    if (!f) FAIL(f.error().to_string());
    CHECK(f->fstab_content.starts_with("# /etc/fstab of light guest " + g.substr(5) + " (pathwarden lab)\n"));
    CHECK(f->fstab_sha256 == pw::guest::sha256_hex(f->fstab_content));
    CHECK(f->fstab.print() == f->fstab_content);
    CHECK(f->fstab.entry_for("/srv/data " + g.substr(5))->spec == "LABEL=data " + g.substr(5));
    REQUIRE(pw::guest::find_interface(f->interfaces, "eth0"));
    CHECK(pw::guest::find_interface(f->interfaces, "eth0")->mac.valid());
    CHECK(pw::guest::find_counters(f->counters, "eth0"));
    CHECK_FALSE(f->mounts.empty());
    CHECK_FALSE(f->mount_stats.empty());
  }
  // Guest 2's fstab has no final newline (the light guests vary their fstabs on purpose).
  CHECK(facts.at("guest2")->fstab_content.back() != '\n');
  CHECK(facts.at("guest1")->fstab_content.back() == '\n');
}

TEST_CASE("a recorded run with an unreachable guest") {
  std::vector<std::string> hosts = kGuests;
  hosts.push_back("ghost");
  auto report = replay("unreachable", "facts", hosts);
  CHECK(report.exit_code == 4);
  const auto& ghost = *report.host("ghost");
  CHECK(ghost.outcome == HostOutcome::unreachable);
  CHECK(ghost.failure()->message.find("203.0.113.250") != std::string::npos);
  CHECK(describe_outcome(ghost).starts_with("unreachable: "));
  CHECK(report.succeeded() == kGuests);
}

TEST_CASE("a recorded apply where one guest's fstab had changed") {
  auto report = replay("cas", "apply", kGuests);
  CHECK(report.exit_code == 2);
  const auto& g2 = *report.host("guest2");
  CHECK(g2.outcome == HostOutcome::failed);
  REQUIRE(g2.failure());
  CHECK(g2.failure()->task == task::apply);
  auto refused = change_outcome_from(g2, task::apply);
  REQUIRE(refused);
  CHECK(refused->failed_in == pw::guest::ChangeStage::refuse);  // nothing after the refusal ran
  CHECK_FALSE(refused->report.reached(pw::guest::ChangeStage::backup));
  CHECK(refused->message ==
        "failed in 'Refuse to write when the fstab changed since it was observed': the fstab changed since "
        "pathwarden observed it; gather facts and plan again");
  for (const char* g : {"guest1", "guest3"}) {
    const auto& h = *report.host(g);
    CHECK(h.outcome == HostOutcome::changed);
    auto done = change_outcome_from(h, task::apply);
    REQUIRE(done);
    CHECK(done->report.finished);
    CHECK_FALSE(done->failed_in);
    CHECK(done->report.reached(pw::guest::ChangeStage::write));
  }
}

TEST_CASE("an fstab script ended by the guest's time limit says so, with the stage it was in") {
  // As the guest's `timeout` leaves it: the marks up to the hung stage, nothing on stderr, exit 124.
  const auto out = pw::guest::framed_output("5e4d3c2b-1a09-4f8e-8d7c-6b5a4f3e2d1c",
                                            {{"stage read", ""},
                                             {"stage refuse", ""},
                                             {"stage backup", ""},
                                             {"stage write", ""},
                                             {"stage check_written", ""},
                                             {"stage unmount", ""},
                                             {"stage mount", ""}},
                                            false);
  HostReport h;
  h.host = "guest1";
  h.outcome = HostOutcome::failed;
  h.tasks.push_back(TaskOutcome{task::apply, TaskResult::failed, "non-zero return code",
                                boost::json::object{{"rc", 124}, {"stdout", out}, {"stderr", ""}}});
  auto outcome = change_outcome_from(h, task::apply);
  REQUIRE(outcome);
  CHECK(outcome->failed_in == pw::guest::ChangeStage::mount);
  CHECK(outcome->message ==
        "failed in 'Mount them again with the new options': ended by the guest's time limit "
        "(spec.ansible.guest_timeout)");
}

TEST_CASE("a recorded probe: observations, and the guest whose dd failed") {
  auto report = replay("probe", "probe", kGuests);
  CHECK(report.exit_code == 0);  // dd's failure is the verifier's to judge, not a failed host
  auto obs = probe_observations_from(report);
  for (const char* g : {"guest1", "guest2"}) {
    INFO(g);
    auto& o = obs.at(g);
    if (!o) FAIL(o.error().to_string());
    REQUIRE(o->dd);
    CHECK(o->dd->bytes == 4u << 20);
    CHECK(o->dd->seconds > 0);
    CHECK(o->probe_seconds > 0);
    CHECK(o->window_seconds >= o->probe_seconds);
    CHECK(pw::guest::find_counters(o->before.counters, "eth0"));
    CHECK(pw::guest::find_counters(o->after.counters, "eth0")->rx_bytes >=
          pw::guest::find_counters(o->before.counters, "eth0")->rx_bytes);
  }
  REQUIRE(obs.at("guest3"));
  CHECK(obs.at("guest3")->probe_rc != 0);
  CHECK(obs.at("guest3")->probe_stderr.find("No such file or directory") != std::string::npos);
  CHECK_FALSE(obs.at("guest3")->dd);
}

TEST_CASE("a recorded run cut short by its timeout") {
  auto report = replay("timeout", "probe", {"guest1", "guest2"});
  CHECK(report.timed_out);
  CHECK_FALSE(report.complete);
  const auto& g1 = *report.host("guest1");
  CHECK(g1.outcome == HostOutcome::timed_out);
  CHECK(g1.pending_task == task::probe);
  CHECK(describe_outcome(g1) == std::string("timed out in '") + task::probe + "'");
  const auto& g2 = *report.host("guest2");
  CHECK(g2.outcome == HostOutcome::timed_out);  // it finished the probe, not the run
  CHECK(g2.pending_task.empty());
  CHECK(report.succeeded().empty());
  CHECK_FALSE(probe_observations_from(report).at("guest1"));
}

TEST_CASE("a run that never started is an error with ansible's words") {
  std::vector<std::string> hosts{"g"};
  auto r = read_run("apply", "", "ERROR! the playbook: x.yml could not be found\n", 1, false, hosts);
  REQUIRE_FALSE(r);
  CHECK(r.error().to_string() ==
        "apply playbook: ansible-playbook stopped before running anything (exit code 1): ERROR! the playbook: x.yml "
        "could not be found (check the inventory and the playbook with ansible-playbook --syntax-check)");
  auto noise = read_run("facts", "not json\n{\"no_event\":1}\n", "", 5, false, hosts);
  REQUIRE_FALSE(noise);
  CHECK(noise.error().hint == "an option given to ansible-playbook is wrong");
}

TEST_CASE("a guest the run never touched is 'not run'") {
  std::vector<std::string> hosts{"guest1", "missing"};
  auto run = recording("facts", "facts");
  auto report = read_run("facts", run.jsonl, "", 0, false, hosts);
  REQUIRE(report);
  CHECK(report->host("missing")->outcome == HostOutcome::not_run);
  CHECK_FALSE(guest_facts_from(*report).at("missing"));
}

TEST_CASE("the recorded runner replays in order and keeps the requests") {
  RecordedPlaybookRunner runner({recording("facts", "facts"), recording("cas", "apply")});
  std::vector<std::string> hosts = kGuests;
  RunRequest facts{"facts", *facts_playbook(hosts), {}, 5, std::chrono::seconds(60)};
  auto first = runner.run(facts);
  REQUIRE(first);
  CHECK(first->succeeded() == kGuests);
  auto wrong = runner.run(facts);  // the next recording is an apply
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().what == "the next recorded run is for phase apply, not facts");
  CHECK_FALSE(runner.run(facts));
  CHECK(runner.requests().size() == 3);
  CHECK(runner.requests()[0].playbook.name == "facts");
}

TEST_CASE("the real runner's command line: one process, all guests, machine-readable output") {
  RunnerOptions settings;
  settings.command_prefix = {"ip", "netns", "exec", "lab"};
  settings.environment = {{"ANSIBLE_CONFIG", "/x/ansible.cfg"}};
  AnsiblePlaybookRunner runner(settings);
  RunRequest request{"facts", *facts_playbook(kGuests), {"/inv/a.ini", "/inv/b.ini"}, 25, std::chrono::seconds(60)};
  CHECK(runner.command_for(request, "/w/facts/facts.yml") ==
        std::vector<std::string>{"ip", "netns", "exec", "lab", "ansible-playbook", "--inventory", "/inv/a.ini",
                                 "--inventory", "/inv/b.ini", "--forks", "25", "/w/facts/facts.yml"});
  auto env = runner.environment();
  auto has = [&](const std::string& k, const std::string& v) {
    return std::find(env.begin(), env.end(), std::pair{k, v}) != env.end();
  };
  CHECK(has("ANSIBLE_STDOUT_CALLBACK", "ansible.posix.jsonl"));
  CHECK(has("ANSIBLE_HOST_KEY_CHECKING", "True"));
  CHECK(has("ANSIBLE_CONFIG", "/x/ansible.cfg"));

  // With pathwarden's SSH arguments, they go as extra vars too: no inventory variable outranks them.
  settings.environment.emplace_back("ANSIBLE_SSH_ARGS", "-o StrictHostKeyChecking=yes");
  const auto argv = AnsiblePlaybookRunner(settings).command_for(request, "/w/facts/facts.yml");
  const auto at = std::find(argv.begin(), argv.end(), "--extra-vars");
  REQUIRE(at != argv.end());
  CHECK(*(at + 1) == R"({"ansible_ssh_args":"-o StrictHostKeyChecking=yes","ansible_host_key_checking":true,)"
                     R"("ansible_ssh_host_key_checking":true})");
  CHECK(argv.back() == "/w/facts/facts.yml");
}

TEST_CASE("base64 as coreutils prints it") {
  using pw::guest::decode_base64;
  CHECK(decode_base64("aGVsbG8gd29ybGQK") == "hello world\n");
  CHECK(decode_base64("YQ==") == "a");
  CHECK(decode_base64("") == "");
  CHECK_FALSE(decode_base64("a$b"));
  CHECK_FALSE(decode_base64("YQ==YQ"));
}

TEST_CASE("a failure for want of root says what to set") {
  // Ansible's own words when sudo wants a password (become with sudo, ansible-core 2.14).
  CHECK_THAT(privilege_hint("failed in 'Write the new fstab': Missing sudo password", true),
             Catch::Contains("sudo without a password"));
  CHECK_THAT(privilege_hint("failed in 'Make the backup directory': Permission denied", false),
             Catch::Contains("spec.ansible.become: true"));
  // With become on, a permission error is not about become (an export's root squash, say).
  CHECK(privilege_hint("failed in 'Write the new fstab': Permission denied", true).empty());
  CHECK(privilege_hint("failed in 'Write the new fstab': No space left on device", false).empty());
}

TEST_CASE("the facts run's Docker task: the volumes, or why Docker did not list them") {
  auto report = replay("facts", "facts", kGuests);
  auto docker = [](long long rc, std::string out, std::string err) {
    return TaskOutcome{task::docker_volumes,
                       TaskResult::ok,
                       {},
                       boost::json::object{{"rc", rc}, {"stdout", std::move(out)}, {"stderr", std::move(err)}}};
  };
  auto& g1 = report.hosts.at("guest1").tasks;
  g1.push_back(docker(0,
                      R"([{"Driver": "local", "Labels": {"com.docker.compose.project": "pg",
                      "com.docker.compose.volume": "pgdata"}, "Mountpoint": "/var/lib/docker/volumes/pg_pgdata/_data",
                      "Name": "pg_pgdata", "Options": {"type": "nfs", "o": "addr=198.51.100.2", "device": ":/e"}}])",
                      ""));
  report.hosts.at("guest2").tasks.push_back(docker(3, "", "no docker command in the guest\n"));
  auto facts = guest_facts_from(report);
  REQUIRE(facts.at("guest1"));
  REQUIRE(facts.at("guest1")->docker.has_value());
  REQUIRE(*facts.at("guest1")->docker);
  CHECK((*facts.at("guest1")->docker)->at(0).mountpoint == "/var/lib/docker/volumes/pg_pgdata/_data");
  CHECK(pw::guest::find_compose_volume(**facts.at("guest1")->docker, "pg", "pgdata") != nullptr);
  // Exit 3: no docker command. The guest's facts stand; only Docker's part is the error.
  REQUIRE(facts.at("guest2"));
  REQUIRE(facts.at("guest2")->docker.has_value());
  REQUIRE_FALSE(*facts.at("guest2")->docker);
  const auto& none = facts.at("guest2")->docker->error();
  CHECK(none.to_string() ==
        "guest2: Docker did not list its volumes: no docker command in the guest (install Docker there, or use "
        "another spec.mount.owner)");
  CHECK_FALSE(facts.at("guest3")->docker.has_value());  // not asked: absent, not empty

  SECTION("other failures: Docker's own words, the hint by what it says") {
    auto error_of = [&](TaskOutcome t) {
      auto f = with_task(report, "guest3", std::move(t), guest_facts_from);
      REQUIRE(f.at("guest3"));
      REQUIRE(f.at("guest3")->docker.has_value());
      REQUIRE_FALSE(*f.at("guest3")->docker);
      return f.at("guest3")->docker->error();
    };
    auto denied =
        error_of(docker(4, "",
                        "Got permission denied while trying to connect to the Docker daemon socket at "
                        "unix:///var/run/docker.sock: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.41/volumes\": "
                        "dial unix /var/run/docker.sock: connect: permission denied\n"));
    CHECK_THAT(denied.what, Catch::StartsWith("Docker did not list its volumes: Got permission denied"));
    CHECK_THAT(denied.hint, Catch::StartsWith("Docker's socket is root's: set spec.ansible.become: true"));
    auto down = error_of(docker(4, "",
                                "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the "
                                "docker daemon running?\n"));
    CHECK(down.what ==
          "Docker did not list its volumes: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is "
          "the docker daemon running?");
    CHECK(down.hint == "check 'systemctl status docker' in the guest");
    auto silent = error_of(docker(4, "", ""));
    CHECK(silent.what == "Docker did not list its volumes: exit 4");
    auto garbage = error_of(docker(0, "[{\"Name\": ", ""));
    CHECK_THAT(garbage.what, Catch::StartsWith("'docker volume inspect' printed no JSON array"));
    CHECK(garbage.where == "guest3: docker volume inspect");
    TaskOutcome skipped = docker(0, "", "");
    skipped.status = TaskResult::skipped;
    CHECK_FALSE(with_task(report, "guest3", skipped, guest_facts_from).at("guest3")->docker.has_value());
  }
}

TEST_CASE("the probe run's commit cycles: dd oflag=dsync's summary as a figure, or dd's complaint") {
  // A probe task's output as the probe script prints it, with the commit section given.
  const std::string netdev =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier "
      "compressed\n"
      "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n";
  auto run_of = [&](std::optional<std::pair<int, std::string>> commit) {
    std::vector<std::pair<std::string, std::string>> sections{
        {"read before 10.0", netdev}, {"ifindex", "eth0 2\n"}, {"nfs_connections", ""},  {"read after 11.0", netdev},
        {"ifindex", "eth0 2\n"},      {"nfs_connections", ""}, {"probe 0 10.1 10.9", ""}};
    if (commit) sections.emplace_back("commit " + std::to_string(commit->first), commit->second);
    const auto out = pw::guest::framed_output("1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d", sections);
    PlaybookRun report;
    auto& h = report.hosts["guest1"];
    h.host = "guest1";
    h.outcome = HostOutcome::ok;
    h.tasks.push_back(TaskOutcome{task::probe, TaskResult::ok, {}, boost::json::object{{"rc", 0}, {"stdout", out}}});
    auto obs = probe_observations_from(report);
    REQUIRE(obs.at("guest1"));
    return obs.at("guest1")->commit;
  };
  // GNU coreutils dd.
  auto gnu = run_of(std::pair{0, std::string("256+0 records in\n256+0 records out\n2097152 bytes (2.1 MB, 2.0 MiB) "
                                             "copied, 0.41 s, 5.1 MB/s\n")});
  REQUIRE(gnu);
  CHECK(gnu->cycles == 256);
  CHECK(gnu->seconds == Approx(0.41));
  CHECK_FALSE(gnu->error);
  // busybox dd.
  auto busybox = run_of(std::pair{0, std::string("100+0 records in\n100+0 records out\n819200 bytes (800.0KB) copied, "
                                                 "2.500000 seconds, 320.0KB/s\n")});
  REQUIRE(busybox);
  CHECK(busybox->cycles == 100);
  CHECK(busybox->seconds == Approx(2.5));
  // dd refused: the commit file's name was taken (conv=excl).
  auto taken =
      run_of(std::pair{1, std::string("dd: failed to open '/mnt/movies/probe.bin.pathwarden-commit': File exists\n")});
  REQUIRE(taken);
  CHECK(taken->error == "dd: failed to open '/mnt/movies/probe.bin.pathwarden-commit': File exists");
  // Stopped part way (a read-only export): the complaint, not a figure from the partial summary.
  auto rofs = run_of(std::pair{1, std::string("dd: error writing '/mnt/movies/probe.bin.pathwarden-commit': Read-only "
                                              "file system\n1+0 records in\n0+0 records out\n0 bytes copied, 0.01 s, "
                                              "0.0 kB/s\n")});
  REQUIRE(rofs);
  CHECK(rofs->error == "dd: error writing '/mnt/movies/probe.bin.pathwarden-commit': Read-only file system");
  CHECK(rofs->cycles == 0);
  auto no_summary = run_of(std::pair{0, std::string()});
  REQUIRE(no_summary);  // cycles that ran always give a run: a figure or why not
  CHECK(no_summary->error == "dd gave no summary");
  auto killed = run_of(std::pair{137, std::string()});
  CHECK(killed->error == "dd gave no summary");
  CHECK_FALSE(run_of(std::nullopt));  // not asked for: none
}
