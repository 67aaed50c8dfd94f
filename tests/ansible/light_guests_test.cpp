// SPDX-License-Identifier: GPL-3.0-or-later
// Real ansible-playbook over real SSH against light guests (tests/lab/light/guests), brought up
// by the CTest fixture light_guests. Every phase is one ansible-playbook run for all guests.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "ansible/child_process.hpp"
#include "ansible/phase_results.hpp"
#include "ansible/playbooks.hpp"
#include "ansible/runner.hpp"
#include "ansible/ssh_control.hpp"
#include "guest/fstab.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"
#include "light_lab.hpp"
#include "plan/guest_requests.hpp"
#include "plan/guest_writes.hpp"

namespace fs = std::filesystem;
using namespace pw::ansible;
using namespace pw::guest;
using pw::guest::FstabFile;
using pw::guest::GuestFacts;
using pw::guest::sha256_hex;

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

const pw::testing::LightLab& lab() {
  static const auto lab = pw::testing::LightLab::open();
  return lab;
}

std::string guest_name(int i) {
  return "guest" + std::to_string(i);
}

std::vector<std::string> all_guests() {
  std::vector<std::string> out;
  for (int i = 1; i <= lab().guests; ++i) out.push_back(guest_name(i));
  return out;
}

// Runs argv inside guest i (its network and mount namespaces); values stay argv items.
ChildProcessResult in_guest(int i, std::vector<std::string> argv) {
  return lab().exec(i, std::move(argv));
}

std::string guest_file(int i, const std::string& path) {
  auto r = in_guest(i, {"cat", "--", path});
  REQUIRE(r.exit_code == 0);
  return r.out;
}

bool guest_has(int i, const std::string& path) {
  return in_guest(i, {"test", "-e", path}).exit_code == 0;
}

void set_guest_file(int i, const std::string& path, const std::string& content) {
  auto r = in_guest(i, {"sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", content, path});
  REQUIRE(r.exit_code == 0);
}

AnsiblePlaybookRunner runner(const std::string& tag, bool verbose = false) {
  RunnerOptions s;
  s.command_prefix = {"ip", "netns", "exec", lab().controller_namespace};
  s.work_dir = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / tag;
  s.environment = {{"ANSIBLE_CONFIG", lab().ansible_config}};
  // -vvv: Ansible prints each ssh command line it runs, the argv `ps` would show.
  if (verbose) s.environment.emplace_back("ANSIBLE_VERBOSITY", "3");
  if (const char* rec = std::getenv("PW_RECORD_DIR")) s.record_dir = fs::path(rec) / tag;
  return AnsiblePlaybookRunner(s);
}

PlaybookRun run_phase(const std::string& tag, const std::string& phase, pw::Result<Playbook> playbook,
                      std::vector<fs::path> extra_inventories = {},
                      std::chrono::seconds timeout = std::chrono::minutes(5), bool verbose = false) {
  if (!playbook) FAIL(playbook.error().to_string());
  RunRequest request{phase, std::move(*playbook), {lab().inventory}, 10, timeout};
  for (auto& i : extra_inventories) request.inventories.push_back(i);
  auto r = runner(tag, verbose);
  auto report = r.run(request);
  if (!report) FAIL(report.error().to_string());
  for (const auto& [name, host] : report->hosts) {
    UNSCOPED_INFO(phase << " " << name << ": " << describe_outcome(host));
  }
  return *report;
}

std::map<std::string, GuestFacts> gather(const std::string& tag, std::vector<std::string> hosts = all_guests()) {
  auto report = run_phase(tag, "facts", facts_playbook(hosts));
  std::map<std::string, GuestFacts> out;
  for (auto& [name, facts] : guest_facts_from(report)) {
    if (!facts) FAIL(facts.error().to_string());
    out.emplace(name, std::move(*facts));
  }
  return out;
}

const pw::guest::MountInfo* mount_at(const GuestFacts& facts, const std::string& path) {
  const pw::guest::MountInfo* found = nullptr;
  for (const auto& m : facts.mounts) {
    if (m.mount_point == path) found = &m;  // the last one is the visible one
  }
  return found;
}

// PIDs of processes on this machine (the light guests share its PID namespace) whose argv is
// exactly `argv`.
// /proc/PID/cmdline, or "" for a process that ended meanwhile (a read of a gone process fails
// with ESRCH, which an ifstream turns into an exception).
std::string cmdline_of(const fs::path& proc_entry) {
  const int fd = ::open((proc_entry / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::vector<int> processes_running(const std::vector<std::string>& argv) {
  std::string want;
  for (const auto& a : argv) want += a + std::string(1, '\0');
  std::vector<int> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (cmdline_of(entry.path()) == want) out.push_back(std::stoi(name));
  }
  return out;
}

const pw::guest::EntryOwner kOwner{"light-test", "size pinned on purpose: the test checks it is re-made"};

// The lines of `before` and `after` must match except for the entry of `mount_point` and its
// owner comment: checked by removing the owned entry and comparing the rest byte for byte.
void check_only_owned_entry_changed(const std::string& before, const std::string& after,
                                    const std::string& mount_point) {
  auto a = FstabFile::parse(after);
  auto b = FstabFile::parse(before);
  REQUIRE(a.remove_entry(mount_point));
  if (b.entry_for(mount_point)) REQUIRE(b.remove_entry(mount_point));
  auto rest_after = a.print(), rest_before = b.print();
  // A file without a final newline gains one when an entry is appended.
  if (!rest_before.empty() && rest_before.back() != '\n') rest_before.push_back('\n');
  CHECK(rest_after == rest_before);
}

}  // namespace

TEST_CASE("facts from every light guest in one run") {
  REQUIRE(lab().guests >= 3);
  auto report = run_phase("facts", "facts", facts_playbook(all_guests()));
  CHECK(report.exit_code == 0);
  CHECK(report.complete);
  auto facts = guest_facts_from(report);
  REQUIRE(facts.size() == static_cast<std::size_t>(lab().guests));
  for (int i = 1; i <= lab().guests; ++i) {
    INFO(guest_name(i));
    auto& f = facts.at(guest_name(i));
    if (!f) FAIL(f.error().to_string());
    auto fstab = guest_file(i, "/etc/fstab");
    CHECK(f->fstab_content == fstab);
    CHECK(f->fstab_sha256 == sha256_hex(fstab));
    CHECK(f->fstab.print() == fstab);
    CHECK(f->fstab.entry_for("/mnt/scratch").has_value());
    CHECK_FALSE(f->boot_id.empty());
    auto mac = in_guest(i, {"cat", "/sys/class/net/eth0/address"}).out;
    mac.pop_back();
    const auto* eth0 = pw::guest::find_nic_interface(f->interfaces, mac);
    REQUIRE(eth0);
    CHECK(eth0->name == "eth0");
    CHECK(eth0->rx_queues >= 1);
    REQUIRE(eth0->channels);  // veth answers ethtool -l with RX/TX
    CHECK(eth0->channels->maximum.rx.has_value());
    const auto* counters = pw::guest::find_counters(f->counters, "eth0");
    REQUIRE(counters);
    CHECK(counters->rx_bytes > 0);  // at least this run's SSH traffic
    const auto* etc = mount_at(*f, "/etc");
    REQUIRE(etc);  // the guest's own /etc
    CHECK(f->nfs_connections.empty());
    CHECK(f->nfs_servers.empty());
  }
}

TEST_CASE("apply rewrites only the owned entry, keeps a backup, re-makes the mount; rollback restores") {
  // A mount point with a space: /proc/mounts writes it as \040, and the scripts find it there.
  const std::string path = "/mnt/pw act";
  // Guest 1 without Python: every phase is a shell script (raw), so nothing may need it.
  const std::string python = [] {
    auto r = in_guest(1, {"readlink", "-f", "/usr/bin/python3"});
    REQUIRE(r.exit_code == 0);
    return std::string(pw::guest::trim(r.out));
  }();
  REQUIRE(in_guest(1, {"mount", "--bind", "/bin/false", python}).exit_code == 0);
  struct Unhide {
    std::string python;
    ~Unhide() { in_guest(1, {"umount", python}); }
  } unhide{python};
  REQUIRE(in_guest(1, {python, "-c", "pass"}).exit_code != 0);
  auto mounts_at = [&](const pw::guest::GuestFacts& f) {
    return std::count_if(f.mounts.begin(), f.mounts.end(), [&](const auto& m) { return m.mount_point == path; });
  };
  for (int i = 1; i <= lab().guests; ++i) {
    auto r =
        in_guest(i, {"sh", "-c", "mkdir -p \"$1\" && mount -t tmpfs -o size=1m \"$2\" \"$1\" && touch \"$1/marker\"",
                     "sh", path, "pwtest-" + std::to_string(i)});
    REQUIRE(r.exit_code == 0);
  }
  auto before = gather("apply-facts");
  std::vector<FstabChange> changes;
  std::map<std::string, std::string> written;
  for (auto& [host, f] : before) {
    auto file = f.fstab;
    auto changed = file.set_entry({"pwtest-" + host.substr(5), path, "tmpfs", {"size=2m", "mode=0750"}, 0, 0}, kOwner);
    REQUIRE(changed);
    REQUIRE(*changed);
    written[host] = file.print();
    changes.push_back({host,
                       f.fstab_sha256,
                       written[host],
                       "/var/backups/pathwarden/fstab.light-apply",
                       {{path, "pwtest-" + host.substr(5), "tmpfs", {"size=2m", "mode=0750"}, true}},
                       f.fstab_content});
  }
  auto report = run_phase("apply", "apply", apply_playbook(changes));
  CHECK(report.exit_code == 0);
  for (int i = 1; i <= lab().guests; ++i) {
    auto host = guest_name(i);
    INFO(host);
    CHECK(report.host(host)->outcome == HostOutcome::changed);
    auto now = guest_file(i, "/etc/fstab");
    CHECK(now == written[host]);
    check_only_owned_entry_changed(before.at(host).fstab_content, now, path);
    CHECK(FstabFile::parse(now).owner_of(path) == kOwner);
    CHECK(guest_file(i, "/var/backups/pathwarden/fstab.light-apply") == before.at(host).fstab_content);
    CHECK_FALSE(guest_has(i, path + "/marker"));  // a new tmpfs: unmounted and mounted, not remounted
  }
  auto after = gather("apply-facts");
  for (auto& [host, f] : after) {
    INFO(host);
    const auto* m = mount_at(f, path);
    REQUIRE(m);
    CHECK(m->option("size") == "2048k");
    CHECK(m->option("mode") == "750");
    CHECK(mounts_at(f) == 1);  // the old one unmounted, not hidden under the new
  }

  std::vector<FstabRestore> restores;
  for (auto& [host, f] : before) {
    restores.push_back({host,
                        "/var/backups/pathwarden/fstab.light-apply",
                        f.fstab_sha256,
                        sha256_hex(written[host]),
                        {{path, "pwtest-" + host.substr(5), "tmpfs", {"size=1m"}, true}}});
  }
  auto rollback = run_phase("rollback", "rollback", rollback_playbook(restores));
  CHECK(rollback.exit_code == 0);
  auto restored = gather("apply-facts");
  for (int i = 1; i <= lab().guests; ++i) {
    auto host = guest_name(i);
    INFO(host);
    CHECK(rollback.host(host)->outcome == HostOutcome::changed);
    CHECK(guest_file(i, "/etc/fstab") == before.at(host).fstab_content);
    const auto* m = mount_at(restored.at(host), path);
    REQUIRE(m);
    CHECK(m->option("size") == "1024k");
    CHECK(mounts_at(restored.at(host)) == 1);
    REQUIRE(in_guest(i, {"umount", path}).exit_code == 0);
  }
}

TEST_CASE("apply refuses a guest whose fstab changed since it was observed; the others go on") {
  auto before = gather("cas-facts");
  const std::string edited = before.at("guest2").fstab_content + "# edited by hand after pathwarden looked\n";
  set_guest_file(2, "/etc/fstab", edited);

  std::vector<FstabChange> changes;
  std::map<std::string, std::string> written;
  for (auto& [host, f] : before) {
    auto file = f.fstab;
    REQUIRE(file.set_entry({"nas:/export", "/mnt/pw-cas", "nfs", {"vers=3", "nconnect=8"}, 0, 0}, kOwner));
    written[host] = file.print();
    changes.push_back(
        {host, f.fstab_sha256, written[host], "/var/backups/pathwarden/fstab.light-cas", {}, f.fstab_content});
  }
  auto report = run_phase("cas", "apply", apply_playbook(changes));
  CHECK(report.exit_code == 2);
  const auto& g2 = *report.host("guest2");
  CHECK(g2.outcome == HostOutcome::failed);
  REQUIRE(g2.failure());
  CHECK(g2.failure()->task == task::apply);
  auto refused = change_outcome_from(g2, task::apply);
  REQUIRE(refused);
  CHECK(refused->failed_in == pw::guest::ChangeStage::refuse);
  CHECK(refused->message.find("changed since pathwarden observed it") != std::string::npos);
  CHECK(guest_file(2, "/etc/fstab") == edited);
  CHECK_FALSE(guest_has(2, "/var/backups/pathwarden/fstab.light-cas"));
  for (int i : {1, 3}) {
    auto host = guest_name(i);
    INFO(host);
    CHECK(report.host(host)->outcome == HostOutcome::changed);
    CHECK(guest_file(i, "/etc/fstab") == written[host]);
  }

  SECTION("rollback refuses to overwrite an edit made after the write") {
    const std::string edited1 = written["guest1"] + "# edited after pathwarden wrote\n";
    set_guest_file(1, "/etc/fstab", edited1);
    std::vector<FstabRestore> restores;
    for (int i : {1, 3}) {
      auto host = guest_name(i);
      restores.push_back({host,
                          "/var/backups/pathwarden/fstab.light-cas",
                          before.at(host).fstab_sha256,
                          sha256_hex(written[host]),
                          {}});
    }
    auto rollback = run_phase("cas", "rollback", rollback_playbook(restores));
    CHECK(rollback.exit_code == 2);
    CHECK(rollback.host("guest1")->outcome == HostOutcome::failed);
    CHECK(guest_file(1, "/etc/fstab") == edited1);
    CHECK(rollback.host("guest3")->outcome == HostOutcome::changed);
    CHECK(guest_file(3, "/etc/fstab") == before.at("guest3").fstab_content);
  }
  for (int i = 1; i <= lab().guests; ++i) set_guest_file(i, "/etc/fstab", before.at(guest_name(i)).fstab_content);
}

TEST_CASE("an unreachable guest is reported for that guest only") {
  auto ghost_inventory = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "ghost-inventory.ini";
  fs::create_directories(ghost_inventory.parent_path());
  // An address on the lab bridge where no guest lives: SSH gets no answer.
  std::ofstream(ghost_inventory) << "ghost ansible_host=203.0.113.250 ansible_user=root ansible_ssh_private_key_file="
                                 << lab().state_dir
                                 << "/id_ed25519 ansible_ssh_common_args='-o UserKnownHostsFile=" << lab().state_dir
                                 << "/known_hosts -o StrictHostKeyChecking=yes -o ConnectTimeout=5'\n";
  // guest1 again under another name, checked against an empty known_hosts: host-key checking is
  // on, so SSH must refuse it rather than trust it on first use. Its own ControlPath keeps it off
  // the multiplexed connection an earlier run left open to the same address.
  auto empty_known_hosts = ghost_inventory.parent_path() / "empty_known_hosts";
  std::ofstream(empty_known_hosts).flush();
  std::ofstream(ghost_inventory, std::ios::app)
      << "unpinned ansible_host=203.0.113.11 ansible_user=root ansible_ssh_private_key_file=" << lab().state_dir
      << "/id_ed25519 ansible_ssh_common_args='-o UserKnownHostsFile=" << empty_known_hosts.string()
      << " -o GlobalKnownHostsFile=/dev/null -o ControlPath=" << lab().state_dir << "/u%C'\n";
  auto hosts = all_guests();
  hosts.push_back("ghost");
  hosts.push_back("unpinned");
  auto report = run_phase("unreachable", "facts", facts_playbook(hosts), {ghost_inventory});
  CHECK(report.exit_code == 4);
  const auto& ghost = *report.host("ghost");
  REQUIRE(ghost.outcome == HostOutcome::unreachable);
  CHECK_FALSE(ghost.failure()->message.empty());
  const auto& unpinned = *report.host("unpinned");
  REQUIRE(unpinned.outcome == HostOutcome::unreachable);
  CHECK(unpinned.failure()->message.find("Host key verification failed") != std::string::npos);
  auto facts = guest_facts_from(report);
  CHECK_FALSE(facts.at("ghost"));
  CHECK(facts.at("ghost").error().what.starts_with("unreachable: "));
  for (const auto& h : all_guests()) {
    INFO(h);
    CHECK(report.host(h)->outcome == HostOutcome::ok);
    CHECK(facts.at(h).has_value());
  }
}

TEST_CASE("host-key pinning survives inventory variables that would replace or weaken it") {
  // pathwarden's SSH environment with a pinned known_hosts file that does not hold guest1's key,
  // and an inventory that tries every way to turn checking off for that guest: its ssh_args
  // replaced, host_key_checking false, its own known_hosts in common args. The key is refused.
  const auto work = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work"));
  fs::create_directories(work);
  const auto empty_known_hosts = work / "pinned-empty-known-hosts";
  std::ofstream(empty_known_hosts).flush();
  const auto inventory = work / "weakening-inventory.ini";
  std::ofstream(inventory)
      << "weakened ansible_host=203.0.113.11 ansible_user=root ansible_ssh_private_key_file=" << lab().state_dir
      << "/id_ed25519 ansible_ssh_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'"
         " ansible_host_key_checking=false ansible_ssh_host_key_checking=false"
         " ansible_ssh_common_args='-o UserKnownHostsFile="
      << lab().state_dir << "/known_hosts -o ControlPath=" << lab().state_dir << "/w%C'\n";
  RunnerOptions s;
  s.command_prefix = {"ip", "netns", "exec", lab().controller_namespace};
  s.work_dir = work / "weakened";
  s.environment = {{"ANSIBLE_CONFIG", lab().ansible_config}};
  pw::ansible::SshOptions ssh;
  ssh.known_hosts_file = empty_known_hosts.string();
  for (auto& kv : pw::ansible::ssh_environment(ssh)) s.environment.push_back(std::move(kv));
  AnsiblePlaybookRunner r(s);
  const std::vector<std::string> hosts{"weakened"};
  auto playbook = facts_playbook(hosts);
  REQUIRE(playbook);
  auto report = r.run(RunRequest{"facts", std::move(*playbook), {inventory}, 10, std::chrono::minutes(5)});
  REQUIRE(report);
  const auto* host = report->host("weakened");
  REQUIRE(host != nullptr);
  CHECK(host->outcome == HostOutcome::unreachable);
  REQUIRE(host->failure());
  CHECK(host->failure()->message.find("Host key verification failed") != std::string::npos);
}

TEST_CASE("probes: counters around an O_DIRECT read; a failing probe is that guest's failure only") {
  const std::string file = "/var/backups/pw-probe.bin";  // on disk: O_DIRECT needs more than old tmpfs
  for (int i = 1; i <= 2; ++i) {
    REQUIRE(in_guest(i, {"dd", "if=/dev/zero", "of=" + file, "bs=1M", "count=4", "status=none"}).exit_code == 0);
  }
  std::vector<ProbeRequest> probes;
  for (const auto& h : all_guests()) probes.push_back({h, file, 4u << 20, ProbeDirection::read, 1u << 20});
  auto report = run_phase("probe", "probe", probe_playbook(probes));
  CHECK(report.exit_code == 0);  // dd's failure is the verifier's to judge, not a failed host
  auto observations = probe_observations_from(report);
  for (int i = 1; i <= 2; ++i) {
    INFO(guest_name(i));
    auto& obs = observations.at(guest_name(i));
    if (!obs) FAIL(obs.error().to_string());
    REQUIRE(obs->dd);
    CHECK(obs->dd->bytes == 4u << 20);
    CHECK(obs->window_seconds >= obs->probe_seconds);
    const auto* rx_before = pw::guest::find_counters(obs->before.counters, "eth0");
    const auto* rx_after = pw::guest::find_counters(obs->after.counters, "eth0");
    REQUIRE(rx_before);
    REQUIRE(rx_after);
    CHECK(rx_after->rx_bytes >= rx_before->rx_bytes);  // the same interface, read twice
  }
  // guest3 has no probe file: the run goes on (counters after, facts), and dd's complaint is kept.
  auto& g3 = observations.at("guest3");
  REQUIRE(g3);
  CHECK(g3->probe_rc != 0);
  CHECK(pw::guest::dd_open_failure(g3->probe_stderr) == "No such file or directory");
  CHECK_FALSE(g3->dd);
  // The counter read's script: ifindexes of every interface, and (no NFS here) no connections.
  CHECK(g3->after.ifindex.contains("eth0"));
  CHECK(g3->after.nfs_connections.empty());

  SECTION("a write probe removes its file") {
    std::vector<ProbeRequest> write{{"guest1", "/var/backups/pw-write.bin", 2u << 20, ProbeDirection::write, 1u << 20}};
    auto w = run_phase("probe-write", "probe", probe_playbook(write));
    CHECK(w.exit_code == 0);
    auto obs = probe_observations_from(w);
    REQUIRE(obs.at("guest1"));
    CHECK(obs.at("guest1")->dd->bytes == 2u << 20);
    CHECK_FALSE(guest_has(1, "/var/backups/pw-write.bin"));
  }
}

TEST_CASE("values from policies cannot change what runs") {
  // Quotes, shell syntax, Jinja, a newline: if any of it were interpreted, a marker file appears
  // (in the guest's /tmp or the controller's) or the text written differs.
  const std::string marker = "/tmp/pw-injected-" + lab().name;
  const std::string hostile = "q' \" ; touch " + marker + "-a; $(touch " + marker + "-b) `touch " + marker +
                              "-c` {{ lookup('pipe', 'touch " + marker + "-d') }} {% if true %}x{% endif %} {# c #}";
  const std::string mount_point = "/mnt/pw " + hostile;
  const std::string source = "src " + hostile;
  const std::string probe_file = "/var/backups/pw probe " + hostile + "\nline2";
  REQUIRE(
      in_guest(1, {"sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && dd if=/dev/zero of=\"$1\" bs=1M count=1 status=none",
                   "sh", probe_file})
          .exit_code == 0);

  auto before = gather("inject-facts", {"guest1"});
  auto file = before.at("guest1").fstab;
  REQUIRE(file.set_entry({source, mount_point, "tmpfs", {"size=1m", "x-note=" + hostile.substr(0, 40)}, 0, 0},
                         {"policy " + hostile, "reason " + hostile + "\nsecond line"}));
  auto content = file.print();
  std::vector<FstabChange> changes{{"guest1",
                                    before.at("guest1").fstab_sha256,
                                    content,
                                    "/var/backups/pathwarden/fstab.inject " + hostile,
                                    {{mount_point, source, "tmpfs", {"size=1m"}, true}},
                                    before.at("guest1").fstab_content}};
  auto apply = run_phase("inject", "apply", apply_playbook(changes));
  CHECK(apply.exit_code == 0);
  CHECK(guest_file(1, "/etc/fstab") == content);

  std::vector<ProbeRequest> probes{{"guest1", probe_file, 1u << 20, ProbeDirection::read, 1u << 20}};
  auto probe = run_phase("inject", "probe", probe_playbook(probes));
  CHECK(probe.exit_code == 0);
  auto obs = probe_observations_from(probe);
  REQUIRE(obs.at("guest1"));
  CHECK(obs.at("guest1")->dd->bytes == 1u << 20);  // it read exactly that file

  auto after = gather("inject-facts", {"guest1"});
  const auto* m = mount_at(after.at("guest1"), mount_point);
  REQUIRE(m);
  CHECK(m->device == source);
  CHECK(m->fstype == "tmpfs");

  std::vector<FstabRestore> restores{{"guest1",
                                      "/var/backups/pathwarden/fstab.inject " + hostile,
                                      before.at("guest1").fstab_sha256,
                                      sha256_hex(content),
                                      {{mount_point, "", "", {}, false}}}};
  auto rollback = run_phase("inject", "rollback", rollback_playbook(restores));
  CHECK(rollback.exit_code == 0);
  CHECK(guest_file(1, "/etc/fstab") == before.at("guest1").fstab_content);
  CHECK(mount_at(gather("inject-facts", {"guest1"}).at("guest1"), mount_point) == nullptr);

  for (const char* suffix : {"-a", "-b", "-c", "-d"}) {
    INFO(suffix);
    CHECK_FALSE(guest_has(1, marker + suffix));
    CHECK_FALSE(fs::exists(marker + suffix));  // the controller shares this machine's /tmp
  }
}

TEST_CASE("a run cut short by its timeout: guests reported as timed out, its processes ended") {
  // guest1's probe waits an hour before its counters (a baseline of 3599 s): only the run's own
  // limit ends the run, long before the guest's (300 s).
  std::vector<ProbeRequest> probes{{"guest1", "/etc/fstab", 4096, ProbeDirection::read, 4096},
                                   {"guest2", "/etc/fstab", 4096, ProbeDirection::read, 4096}};
  probes[0].baseline = std::chrono::seconds(3599);
  auto report = run_phase("timeout", "probe", probe_playbook(probes), {}, std::chrono::seconds(20));
  CHECK(report.timed_out);
  CHECK_FALSE(report.complete);
  CHECK(report.host("guest1")->outcome == HostOutcome::timed_out);
  CHECK(report.host("guest2")->outcome != HostOutcome::ok);  // the run as a whole did not finish
  // Nothing of that ansible-playbook run is left: no process still names its playbook.
  auto playbook =
      (fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "timeout" / "probe" / "probe.yml").string();
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    if (cmdline_of(entry.path()).find(playbook) != std::string::npos) left.push_back(entry.path().filename().string());
  }
  CHECK(left.empty());
  // The guest's own limit (300 s) would end its sleep; the test ends it now, by PID.
  for (int pid : processes_running({"sleep", "3599.000"})) ::kill(pid, SIGTERM);
}

TEST_CASE("one hung guest times out alone; a FIFO probe file is refused, never waited on") {
  // guest1's probe would wait an hour (a baseline of 3600 s); the guests' limit is 15 s, the
  // run's two minutes. guest1 ends in the guest itself (timeout's exit 124) with nothing left
  // running there; guest2 and guest3, which answered at once, keep their results.
  // guest3's probe file is a FIFO: refused at once by name, where dd would have blocked.
  const std::string fifo = "/var/backups/pw-hung.fifo";
  REQUIRE(in_guest(3, {"sh", "-c", "rm -f \"$1\" && mkfifo \"$1\"", "sh", fifo}).exit_code == 0);
  std::vector<ProbeRequest> probes{{"guest1", "/etc/fstab", 4096, ProbeDirection::read, 4096},
                                   {"guest2", "/etc/fstab", 4096, ProbeDirection::read, 4096},
                                   {"guest3", fifo, 4096, ProbeDirection::read, 4096}};
  probes[0].baseline = std::chrono::seconds(3600);
  probes[2].mount_point = "/var/backups";
  PlaybookOptions o;
  o.guest_timeout = std::chrono::seconds(15);
  auto report = run_phase("hung", "probe", probe_playbook(probes, o), {}, std::chrono::minutes(2));
  CHECK_FALSE(report.timed_out);
  CHECK(report.complete);
  const auto* g1 = report.host("guest1");
  REQUIRE(g1);
  CHECK(g1->outcome == HostOutcome::failed);
  REQUIRE(g1->failure());
  CHECK(g1->failure()->result.at("rc").as_int64() == 124);
  auto obs = probe_observations_from(report);
  CHECK(report.host("guest2")->outcome == HostOutcome::ok);
  REQUIRE(obs.at("guest2"));
  REQUIRE(obs.at("guest2")->dd);
  CHECK(obs.at("guest2")->probe_rc == 0);
  CHECK(report.host("guest3")->outcome == HostOutcome::ok);
  REQUIRE(obs.at("guest3"));
  REQUIRE(obs.at("guest3")->refused);
  CHECK(obs.at("guest3")->refused->kind == "fifo");
  CHECK(obs.at("guest3")->refused->message == fifo + " is a FIFO (named pipe), not a regular file");
  in_guest(3, {"rm", "-f", fifo});
  CHECK(processes_running({"sleep", "3600.000"}).empty());
}

// Most shops reach their guests as an unprivileged user who becomes root with sudo. The same
// phases as with root SSH, as pwadmin (NOPASSWD sudo: the sudoers entry policies/README.md
// documents): facts as pwadmin itself; apply, probe and rollback with become. pwplain, who may
// not sudo, fails with sudo's own words; pwadmin without become cannot write the fstab.
TEST_CASE("guests reached as an unprivileged user: become for what needs root, the rest as that user") {
  REQUIRE(lab().guests >= 3);
  const fs::path work = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "become-inventories";
  fs::create_directories(work);
  // Host variables override the lab inventory's [light:vars] ansible_user=root.
  auto as_user = [&](const std::string& user, std::vector<int> guests) {
    auto inv = work / (user + ".ini");
    std::ofstream out(inv);
    for (int i : guests) out << guest_name(i) << " ansible_user=" << user << "\n";
    return std::vector<fs::path>{inv};
  };
  PlaybookOptions become;
  become.become = Become{};  // Ansible's defaults: sudo to root

  const std::string path = "/mnt/pw-become";
  const std::string backup = "/var/backups/pathwarden/fstab.become";
  REQUIRE(
      in_guest(1, {"sh", "-c", "mkdir -p \"$1\" && mount -t tmpfs -o size=1m pwbecome \"$1\"", "sh", path}).exit_code ==
      0);

  auto facts_run = run_phase("become-facts", "facts", facts_playbook(std::vector<std::string>{"guest1"}, become),
                             as_user("pwadmin", {1}));
  auto facts = guest_facts_from(facts_run);
  REQUIRE(facts.at("guest1"));
  const auto& f = *facts.at("guest1");
  CHECK(f.fstab_content == guest_file(1, "/etc/fstab"));
  // Facts as the SSH user itself (no become keyword), with sudo's answer checked: NOPASSWD here.
  CHECK(facts_playbook(std::vector<std::string>{"guest1"}, become)->yaml.find("become: ") == std::string::npos);
  REQUIRE(f.sudo);
  CHECK(f.sudo->outcome == pw::guest::SudoCheck::Outcome::no_password);

  auto file = f.fstab;
  REQUIRE(file.set_entry({"pwbecome", path, "tmpfs", {"size=2m"}, 0, 0}, kOwner));
  const std::vector<FstabChange> changes{{"guest1",
                                          f.fstab_sha256,
                                          file.print(),
                                          backup,
                                          {{path, "pwbecome", "tmpfs", {"size=2m"}, true}},
                                          f.fstab_content}};

  SECTION("without become the SSH user cannot write the fstab") {
    auto denied = run_phase("become-none", "apply", apply_playbook(changes), as_user("pwadmin", {1}));
    const auto* h = denied.host("guest1");
    REQUIRE(h);
    CHECK(h->outcome == HostOutcome::failed);
    REQUIRE(h->failure());
    CHECK_THAT(h->failure()->message, Catch::Contains("Permission denied"));
    CHECK(guest_file(1, "/etc/fstab") == f.fstab_content);
    // Through the guest port: it failed before changing anything (nothing for a rollback to do)
    // and says what to set.
    auto port = lab().ansible_port(work / "port", std::chrono::seconds(120), as_user("pwadmin", {1}));
    auto results = port->apply_fstab(changes);
    REQUIRE(results.contains("guest1"));
    REQUIRE_FALSE(results.at("guest1"));
    CHECK(results.at("guest1").error().kind == GuestFailure::Kind::untouched);
    CHECK_THAT(results.at("guest1").error().error.hint, Catch::Contains("spec.ansible.become: true"));
  }

  SECTION("a user sudo refuses: the guest fails with sudo's reason, nothing is written") {
    auto refused = run_phase("become-refused", "apply", apply_playbook(changes, become), as_user("pwplain", {1}));
    const auto* h = refused.host("guest1");
    REQUIRE(h);
    CHECK(h->outcome == HostOutcome::failed);
    REQUIRE(h->failure());
    CHECK_THAT(h->failure()->message, Catch::Contains("Missing sudo password"));
    CHECK(guest_file(1, "/etc/fstab") == f.fstab_content);
  }

  SECTION("with become: fstab, backup and mount as root; a root-only probe file read; rollback") {
    auto applied = run_phase("become-apply", "apply", apply_playbook(changes, become), as_user("pwadmin", {1}));
    CHECK(applied.host("guest1")->outcome == HostOutcome::changed);
    CHECK(guest_file(1, "/etc/fstab") == changes[0].new_content);
    CHECK(in_guest(1, {"stat", "-c", "%u %a", backup}).out == "0 600\n");
    CHECK(in_guest(1, {"findmnt", "-no", "OPTIONS", path}).out.find("size=2048k") != std::string::npos);

    // Readable by root only. A read probe runs as the SSH user (least privilege: the probe file
    // is world-readable as the README asks), so pwadmin's dd cannot open it...
    const std::string probe_file = "/var/backups/pw-become-probe.bin";
    REQUIRE(in_guest(1, {"sh", "-c", "dd if=/dev/zero of=\"$1\" bs=1M count=2 status=none && chmod 0600 \"$1\"", "sh",
                         probe_file})
                .exit_code == 0);
    std::vector<ProbeRequest> probes{{"guest1", probe_file, 2u << 20, ProbeDirection::read, 1u << 20}};
    auto as_user_probe =
        run_phase("become-probe-user", "probe", probe_playbook(probes, become), as_user("pwadmin", {1}));
    auto denied = probe_observations_from(as_user_probe);
    REQUIRE(denied.at("guest1"));
    CHECK(pw::guest::dd_open_failure(denied.at("guest1")->probe_stderr) == "Permission denied");
    // ... and with the policy's probe_as: root it becomes root, whose bytes prove become.
    probes[0].as_root = true;
    auto probed = run_phase("become-probe", "probe", probe_playbook(probes, become), as_user("pwadmin", {1}));
    auto obs = probe_observations_from(probed);
    REQUIRE(obs.at("guest1"));
    REQUIRE(obs.at("guest1")->dd);
    CHECK(obs.at("guest1")->dd->bytes == 2u << 20);

    const std::vector<FstabRestore> restores{{"guest1",
                                              backup,
                                              f.fstab_sha256,
                                              sha256_hex(changes[0].new_content),
                                              {{path, "pwbecome", "tmpfs", {"size=1m"}, true}}}};
    auto rolled =
        run_phase("become-rollback", "rollback", rollback_playbook(restores, become), as_user("pwadmin", {1}));
    CHECK(rolled.host("guest1")->outcome == HostOutcome::changed);
    CHECK(guest_file(1, "/etc/fstab") == f.fstab_content);
  }
  in_guest(1, {"umount", path});
  in_guest(1, {"rm", "-f", backup});
}

// A sudo that asks for a password (pwpass: sudo with its password): the facts run finds it while
// nothing answers it (plan and --check then refuse the change), and ansible_become_password from
// an Ansible vault answers it, as README "A sudo that asks for a password" says, for a real write.
TEST_CASE("a sudo that asks for a password: found by the facts run, answered by a vaulted become password") {
  REQUIRE(lab().guests >= 1);
  const fs::path work = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "become-password";
  fs::remove_all(work);
  fs::create_directories(work);
  PlaybookOptions become;
  become.become = Become{};
  const std::vector<std::string> hosts{"guest1"};
  auto inventory = [&](const std::string& name, const std::string& text) {
    std::ofstream(work / name) << text;
    return std::vector<fs::path>{work / name};
  };
  auto sudo_of = [&](const std::string& tag, const std::vector<fs::path>& inv) {
    auto facts = guest_facts_from(run_phase(tag, "facts", facts_playbook(hosts, become), inv));
    REQUIRE(facts.at("guest1"));
    REQUIRE(facts.at("guest1")->sudo);
    return *facts.at("guest1")->sudo;
  };
  const auto asks = sudo_of("sudo-asks", inventory("pwpass.ini", "guest1 ansible_user=pwpass\n"));
  CHECK(asks.outcome == pw::guest::SudoCheck::Outcome::asks);
  CHECK_THAT(asks.message, Catch::Contains("password"));
  CHECK(sudo_of("sudo-refuses", inventory("pwplain.ini", "guest1 ansible_user=pwplain\n")).outcome ==
        pw::guest::SudoCheck::Outcome::asks);

  // The password in a vault, its key in a file named by ANSIBLE_VAULT_PASSWORD_FILE (the
  // settings' spec.ansible.environment, or the unit's environment).
  std::ofstream(work / "vault-key") << "pwlab-vault-key\n";
  fs::permissions(work / "vault-key", fs::perms::owner_read | fs::perms::owner_write);
  ChildProcessSpec encrypt;
  encrypt.argv = {"ansible-vault", "encrypt_string",          "--vault-password-file", (work / "vault-key").string(),
                  "--name",        "ansible_become_password", "pwlab-become"};
  encrypt.timeout = std::chrono::seconds(60);
  const auto vaulted = run_child_process(encrypt);
  REQUIRE(vaulted);
  REQUIRE(vaulted->exit_code == 0);
  CHECK(vaulted->out.find("pwlab-become") == std::string::npos);
  std::string indented;
  std::istringstream lines(vaulted->out);
  for (std::string line; std::getline(lines, line);) indented += "      " + line + "\n";
  const auto inv =
      inventory("pwpass-vault.yml", "all:\n  hosts:\n    guest1:\n      ansible_user: pwpass\n" + indented);
  ::setenv("ANSIBLE_VAULT_PASSWORD_FILE", (work / "vault-key").c_str(), 1);
  struct Unset {
    ~Unset() { ::unsetenv("ANSIBLE_VAULT_PASSWORD_FILE"); }
  } unset;
  CHECK(sudo_of("sudo-given", inv).outcome == pw::guest::SudoCheck::Outcome::password_given);

  // And it really answers sudo: a write as root through become, then the file put back.
  auto facts = guest_facts_from(run_phase("sudo-facts", "facts", facts_playbook(hosts, become), inv));
  REQUIRE(facts.at("guest1"));
  const auto& f = *facts.at("guest1");
  auto file = f.fstab;
  REQUIRE(file.set_entry({"pwpass", "/mnt/pw-pass", "tmpfs", {"size=1m", "noauto"}, 0, 0}, kOwner));
  const std::string backup = "/var/backups/pathwarden/fstab.sudo-password";
  const std::vector<FstabChange> changes{{"guest1", f.fstab_sha256, file.print(), backup, {}, f.fstab_content}};
  auto applied = run_phase("sudo-apply", "apply", apply_playbook(changes, become), inv);
  CHECK(applied.host("guest1")->outcome == HostOutcome::changed);
  CHECK(guest_file(1, "/etc/fstab") == changes[0].new_content);
  CHECK(in_guest(1, {"stat", "-c", "%u", backup}).out == "0\n");  // written by root
  in_guest(1, {"sh", "-c", "cp \"$1\" /etc/fstab && rm -f \"$1\"", "sh", backup});
  CHECK(guest_file(1, "/etc/fstab") == f.fstab_content);
}

// State hygiene in the guest (issue 41 item 7): an apply prunes the backup directory to the newest
// so many and none older than the days (never its own backup); its rollback removes the
// directories the apply made for a mount point, deepest first, and nothing else.
TEST_CASE("an apply prunes old backups; its rollback removes the directories it made") {
  REQUIRE(lab().guests >= 2);
  const std::string dir = "/var/backups/pathwarden";
  const std::string backup = dir + "/fstab.hygiene";
  REQUIRE(in_guest(2, {"sh", "-c",
                       "mkdir -p -m 700 \"$1\" && cd \"$1\" && "
                       "for i in 1 2 3; do echo old >fstab.old-$i; touch -d '40 days ago' fstab.old-$i; done && "
                       "for i in 01 02 03 04 05 06 07 08; do echo new >fstab.recent-$i; touch -d \"-$i minutes\" "
                       "fstab.recent-$i; done && echo mine >not-a-backup",
                       "sh", dir})
              .exit_code == 0);
  REQUIRE(in_guest(2, {"test", "!", "-e", "/mnt/pw-made"}).exit_code == 0);
  PlaybookOptions options;
  options.keep_backups = 5;
  options.backup_days = 30;
  const std::vector<std::string> hosts{"guest2"};
  auto facts = guest_facts_from(run_phase("hygiene-facts", "facts", facts_playbook(hosts, options)));
  REQUIRE(facts.at("guest2"));
  const auto& f = *facts.at("guest2");
  const std::string path = "/mnt/pw-made/a/b";
  auto file = f.fstab;
  REQUIRE(file.set_entry({"pwmade", path, "tmpfs", {"size=1m"}, 0, 0}, kOwner));
  const std::vector<FstabChange> changes{{"guest2",
                                          f.fstab_sha256,
                                          file.print(),
                                          backup,
                                          {{path, "pwmade", "tmpfs", {"size=1m"}, true}},
                                          f.fstab_content}};
  auto applied = run_phase("hygiene-apply", "apply", apply_playbook(changes, options));
  REQUIRE(applied.host("guest2")->outcome == HostOutcome::changed);
  CHECK(in_guest(2, {"findmnt", "-no", "FSTYPE", path}).out == "tmpfs\n");
  // The newest five backups stay (this one among them), the rest and the old ones go; a file that
  // is no backup stays. (Other tests may have left backups of their own here: only counts.)
  const auto left = in_guest(2, {"sh", "-c", "cd \"$1\" && ls", "sh", dir}).out;
  INFO(left);
  std::istringstream names(left);
  int backups = 0;
  for (std::string n; std::getline(names, n);) backups += n.starts_with("fstab.") && !n.ends_with(".dirs") ? 1 : 0;
  CHECK(backups == 5);
  CHECK(left.find("fstab.hygiene\n") != std::string::npos);
  CHECK(left.find("fstab.hygiene.dirs\n") != std::string::npos);
  CHECK(left.find("fstab.old-") == std::string::npos);       // older than the days
  CHECK(left.find("fstab.recent-08") == std::string::npos);  // beyond the newest five
  CHECK(left.find("not-a-backup\n") != std::string::npos);

  const std::vector<FstabRestore> restores{
      {"guest2", backup, f.fstab_sha256, sha256_hex(changes[0].new_content), {{path, "pwmade", "tmpfs", {}, false}}}};
  auto rolled = run_phase("hygiene-rollback", "rollback", rollback_playbook(restores, options));
  CHECK(rolled.host("guest2")->outcome == HostOutcome::changed);
  CHECK(guest_file(2, "/etc/fstab") == f.fstab_content);
  CHECK(in_guest(2, {"test", "!", "-e", "/mnt/pw-made"}).exit_code == 0);  // the three it made, gone
  CHECK(in_guest(2, {"test", "-d", "/mnt"}).exit_code == 0);               // what was there stays
  CHECK(in_guest(2, {"test", "!", "-e", backup + ".dirs"}).exit_code == 0);
  in_guest(2, {"sh", "-c", "rm -f \"$1\"/fstab.* \"$1\"/not-a-backup", "sh", dir});
}

TEST_CASE("channels on a veth (Combined: n/a): the set changes nothing and says so, the restore has nothing to do") {
  auto port = lab().ansible_port(fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "channels",
                                 std::chrono::seconds(60));
  // guest2's eth0 is a plain veth (guests 1 and 3 stand in for virtio: tests/lab/light/virtio-ethtool).
  const std::vector<ChannelsRequest> set{{"guest2", "eth0", 2, false}, {"guest1", "pwnosuch0", 2, false}};
  auto r = port->set_channels(set);
  REQUIRE_FALSE(r.at("guest2"));
  INFO(r.at("guest2").error().error.to_string());
  CHECK(r.at("guest2").error().kind == GuestFailure::Kind::untouched);
  CHECK_THAT(r.at("guest2").error().error.to_string(),
             Catch::Contains("cannot set the combined channels of eth0 (Combined: n/a): nothing changed"));
  // A NIC that is not there is ethtool's own failure, not taken for "nothing changed".
  REQUIRE_FALSE(r.at("guest1"));
  CHECK(r.at("guest1").error().kind == GuestFailure::Kind::failed);
  const std::vector<ChannelsRequest> restore{{"guest2", "eth0", 1, true}};
  CHECK(port->set_channels(restore).at("guest2").has_value());
}

TEST_CASE("a symlinked /etc/fstab is edited where it points: the link stays, the file keeps its mode") {
  // As on appliances that keep /etc/fstab elsewhere (here a relative link into /etc/pw-fstab.d).
  const int g = 3;
  const std::string host = guest_name(g);
  const std::string target = "/etc/pw-fstab.d/fstab";
  REQUIRE(in_guest(g, {"sh", "-c",
                       "mkdir -p /etc/pw-fstab.d && cp -p /etc/fstab /etc/pw-fstab.d/fstab && "
                       "chmod 640 /etc/pw-fstab.d/fstab && mv /etc/fstab /etc/fstab.pw-saved && "
                       "ln -s pw-fstab.d/fstab /etc/fstab"})
              .exit_code == 0);
  struct Restore {
    ~Restore() { in_guest(3, {"sh", "-c", "mv -f /etc/fstab.pw-saved /etc/fstab; rm -rf /etc/pw-fstab.d"}); }
  } restore;
  const std::vector<std::string> hosts{host};
  const auto before = gather("symlink-facts", hosts).at(host);
  auto file = before.fstab;
  REQUIRE(file.set_entry({"pwtest-link", "/mnt/pw-link", "tmpfs", {"size=1m"}, 0, 0}, kOwner));
  const auto written = file.print();
  const std::string backup = "/var/backups/pathwarden/fstab.light-symlink";
  const std::vector<FstabChange> changes{{host, before.fstab_sha256, written, backup, {}, before.fstab_content}};
  auto report = run_phase("symlink-apply", "apply", apply_playbook(changes));
  REQUIRE(report.host(host)->outcome == HostOutcome::changed);
  auto link_and_mode = [&] {
    auto r = in_guest(g, {"sh", "-c", "readlink /etc/fstab; stat -c %a /etc/pw-fstab.d/fstab"});
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  CHECK(link_and_mode() == "pw-fstab.d/fstab\n640\n");
  CHECK(guest_file(g, target) == written);
  CHECK(guest_file(g, backup) == before.fstab_content);

  const std::vector<FstabRestore> restores{{host, backup, before.fstab_sha256, sha256_hex(written), {}}};
  auto rollback = run_phase("symlink-rollback", "rollback", rollback_playbook(restores));
  REQUIRE(rollback.host(host)->outcome == HostOutcome::changed);
  CHECK(link_and_mode() == "pw-fstab.d/fstab\n640\n");
  CHECK(guest_file(g, target) == before.fstab_content);
}

TEST_CASE("a guest user whose login shell is fish: every script still runs, under become too") {
  // fish reads backslashes inside single quotes, and so `'\''`, differently from sh; the raw
  // commands hold neither (the scripts travel base64-encoded), so what runs is the same.
  REQUIRE(fs::exists("/usr/bin/fish"));  // tests/packages.txt; the guests share the host's /usr
  const int g = 1;
  const std::string host = guest_name(g);
  REQUIRE(in_guest(g, {"usermod", "-s", "/usr/bin/fish", "pwadmin"}).exit_code == 0);
  struct Restore {
    ~Restore() { in_guest(1, {"usermod", "-s", "/bin/sh", "pwadmin"}); }
  } restore;
  const fs::path inventory = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "fish.ini";
  fs::create_directories(inventory.parent_path());
  std::ofstream(inventory) << host << " ansible_user=pwadmin\n";
  PlaybookOptions become;
  become.become = Become{};
  const std::vector<std::string> hosts{host};
  auto facts_run = run_phase("fish-facts", "facts", facts_playbook(hosts, become), {inventory});
  auto facts = guest_facts_from(facts_run);
  REQUIRE(facts.at(host));
  const auto before = *facts.at(host);
  CHECK(before.fstab_content == guest_file(g, "/etc/fstab"));

  auto file = before.fstab;
  REQUIRE(file.set_entry({"pwtest-fish", "/mnt/pw-fish", "tmpfs", {"size=1m"}, 0, 0}, kOwner));
  const auto written = file.print();
  const std::string backup = "/var/backups/pathwarden/fstab.light-fish";
  const std::vector<FstabChange> changes{{host, before.fstab_sha256, written, backup, {}, before.fstab_content}};
  auto applied = run_phase("fish-apply", "apply", apply_playbook(changes, become), {inventory});
  CHECK(applied.host(host)->outcome == HostOutcome::changed);
  CHECK(guest_file(g, "/etc/fstab") == written);
  const std::vector<FstabRestore> restores{{host, backup, before.fstab_sha256, sha256_hex(written), {}}};
  auto rolled = run_phase("fish-rollback", "rollback", rollback_playbook(restores, become), {inventory});
  CHECK(rolled.host(host)->outcome == HostOutcome::changed);
  CHECK(guest_file(g, "/etc/fstab") == before.fstab_content);
}

TEST_CASE("two policies' entries in one fstab write; one put back alone while the other's mount stays") {
  // Two policies of one guest (tmpfs stands in for their NFS mounts): the planner's composition,
  // the real apply script, then the undo of one by compare-and-swap on what was written. As an
  // operator's guest would have it: reached as a sudo user whose login shell is fish, a mount
  // point with a space, and a reason that would be code if it were ever pasted into a shell.
  REQUIRE(fs::exists("/usr/bin/fish"));
  const int g = 2;
  const std::string host = guest_name(g), a_path = "/mnt/pw many a", b_path = "/mnt/pw-many-b";
  const std::string hostile = "it's \"one\" write; $(touch /tmp/pw-many-pwned) `touch /tmp/pw-many-pwned`";
  REQUIRE(in_guest(g, {"usermod", "-s", "/usr/bin/fish", "pwadmin"}).exit_code == 0);
  struct Restore {
    ~Restore() { in_guest(2, {"usermod", "-s", "/bin/sh", "pwadmin"}); }
  } restore;
  const fs::path inventory = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "many.ini";
  fs::create_directories(inventory.parent_path());
  std::ofstream(inventory) << host << " ansible_user=pwadmin\n";
  PlaybookOptions become;
  become.become = Become{};
  auto as_pwadmin = [&](const std::string& tag, const std::vector<FstabChange>& changes) {
    return run_phase(tag, "apply", apply_playbook(changes, become), {inventory});
  };
  const std::vector<std::string> hosts{host};
  auto observed =
      guest_facts_from(run_phase("many-facts", "facts", facts_playbook(hosts, become), {inventory})).at(host);
  REQUIRE(observed);
  std::vector<pw::plan::PolicyPlan> plans;
  for (const auto& [name, path] : {std::pair{"light-a", a_path}, std::pair{"light-b", b_path}}) {
    auto file = observed->fstab;
    REQUIRE(file.set_entry({"pw-" + std::string(name), path, "tmpfs", {"size=1m"}, 0, 0}, {name, hostile}));
    pw::plan::ChangeFstab c;
    c.host = host;
    c.mount_point = path;
    c.old_content = observed->fstab_content;
    c.new_content = file.print();
    c.old_sha256 = observed->fstab_sha256;
    c.new_sha256 = sha256_hex(c.new_content);
    c.backup_path = "/var/backups/pathwarden/fstab.light-many";
    c.activations = {{path, "pw-" + std::string(name), "tmpfs", {"size=1m"}, true}};
    c.inverse_activations = {{path, "pw-" + std::string(name), "tmpfs", {}, false}};
    pw::plan::PolicyPlan p;
    p.policy = name;
    p.host = host;
    p.state = pw::plan::PolicyState::changes;
    p.steps.push_back({c, true, "write"});
    plans.push_back(std::move(p));
  }
  pw::plan::merge_guest_writes(plans);
  const auto& a = std::get<pw::plan::ChangeFstab>(plans[0].steps.front().action);
  const auto& b = std::get<pw::plan::ChangeFstab>(plans[1].steps.front().action);
  REQUIRE(a.writers == std::vector<std::string>{"light-a", "light-b"});
  auto change = pw::plan::fstab_change(a);
  const std::vector<std::vector<MountActivation>> lists{a.activations, b.activations};
  change.activations = pw::plan::merged_activations(lists);
  CHECK(as_pwadmin("many-apply", {change}).host(host)->outcome == HostOutcome::changed);
  CHECK(guest_file(g, "/etc/fstab") == a.new_content);
  CHECK(FstabFile::parse(a.new_content).owner_of(a_path)->policy == "light-a");
  CHECK(FstabFile::parse(a.new_content).owner_of(b_path)->policy == "light-b");
  REQUIRE(in_guest(g, {"touch", b_path + "/in-use"}).exit_code == 0);  // b's mount, in use

  // light-a failed its proof: its entry goes, light-b's stays (and so does its mount).
  const std::vector<std::string> undone{a_path};
  auto after = pw::plan::content_after_undo(a, undone);
  REQUIRE(after);
  const std::vector<std::vector<MountActivation>> inverses{a.inverse_activations};
  const std::vector<FstabChange> undo{{host, a.new_sha256, *after, a.backup_path + ".undo",
                                       pw::plan::undo_activations(inverses, *after, undone), a.new_content}};
  CHECK(as_pwadmin("many-undo", undo).host(host)->outcome == HostOutcome::changed);
  auto expected = FstabFile::parse(observed->fstab_content);
  REQUIRE(expected.take_entry(FstabFile::parse(a.new_content), b_path));
  CHECK(guest_file(g, "/etc/fstab") == expected.print());
  CHECK(guest_has(g, b_path + "/in-use"));  // never unmounted
  auto facts = gather("many-facts", {host}).at(host);
  CHECK(mount_at(facts, a_path) == nullptr);
  CHECK(mount_at(facts, b_path) != nullptr);

  // A second undo of the same write finds the file already put back: it refuses nothing and
  // changes nothing (a recover retrying after a crash).
  const auto again = as_pwadmin("many-undo-again", undo).host(host)->outcome;
  CHECK((again == HostOutcome::changed || again == HostOutcome::ok));
  CHECK(guest_file(g, "/etc/fstab") == expected.print());
  CHECK_FALSE(guest_has(g, "/tmp/pw-many-pwned"));  // the reason stayed a comment
  // Clean up: the whole write undone from its backup, as when every writer fails.
  const std::vector<FstabRestore> restore_all{{host, a.backup_path, a.old_sha256, sha256_hex(*after), {}}};
  auto port = lab().ansible_port(fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "many",
                                 std::chrono::seconds(120));
  REQUIRE(port->restore_fstab(restore_all).at(host));
  CHECK(guest_file(g, "/etc/fstab") == observed->fstab_content);
  REQUIRE(in_guest(g, {"umount", b_path}).exit_code == 0);
}

namespace {

// The base64 values of PW_SCRIPT in `text` (ansible-playbook's -vvv output: the ssh command
// lines it ran), decoded.
std::vector<std::string> sent_scripts(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex value("PW_SCRIPT=([A-Za-z0-9+/=]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), value); it != std::sregex_iterator(); ++it) {
    if (auto decoded = decode_base64((*it)[1].str())) out.push_back(*decoded);
  }
  return out;
}

}  // namespace

TEST_CASE("hostile values on every login shell, as root and with become: data, never code") {
  // Every field that reaches a guest (an entry's source, mount point, options and owner comment,
  // the backup path, the probe file) holds quotes, fish's \\', $(), backticks, a newline, Jinja,
  // printf's %, a leading -, unicode and a long value. Each of bash, dash, zsh, fish and tcsh is
  // the login shell of root (no become) and of pwadmin (become, from the inventory), three
  // guests a round. Nothing runs; the fstab is written exactly, then put back byte for byte; and
  // no command line on either side holds a line of the fstab pathwarden did not write itself.
  REQUIRE(lab().guests >= 3);
  struct Login {
    std::string shell;
    bool become = false;
  };
  const std::vector<std::array<Login, 3>> rounds{
      {{{"/bin/bash", false}, {"/bin/dash", true}, {"/usr/bin/zsh", false}}},
      {{{"/usr/bin/fish", true}, {"/usr/bin/tcsh", false}, {"/bin/bash", true}}},
      {{{"/bin/dash", false}, {"/usr/bin/zsh", true}, {"/usr/bin/fish", false}}},
      {{{"/usr/bin/tcsh", true}, {"/bin/sh", false}, {"/bin/sh", false}}}};
  for (const char* sh : {"/bin/bash", "/bin/dash", "/usr/bin/zsh", "/usr/bin/fish", "/usr/bin/tcsh"}) {
    INFO(sh << " (tests/packages.txt; the guests share the host's /usr)");
    REQUIRE(fs::exists(sh));
  }
  const std::string marker = "/tmp/pw-shell-pwned-" + lab().name;
  const std::string hostile = "x\\\\'' \"; touch " + marker + "-a; echo \\\\'' $(touch " + marker + "-b) `touch " +
                              marker + "-c` {{ lookup('pipe', 'touch " + marker +
                              "-d') }} {% raw %} %s %n 100% -rf \xc3\xa9\xe6\xbc\xa2\xe2\x80\xae \\\\ \\\\n";
  const std::string long_value(2000, 'L');
  const std::string secret = "PW-SECRET-" + lab().name;
  const std::string cifs = "//nas/private /mnt/pw-cifs cifs username=u,password=" + secret + ",noauto 0 0\n";
  std::map<int, std::string> root_shell;
  for (int g = 1; g <= 3; ++g) {
    auto r = in_guest(g, {"sh", "-c", "getent passwd root | cut -d: -f7"});
    REQUIRE(r.exit_code == 0);
    root_shell[g] = std::string(trim(r.out));
  }
  struct Restore {
    std::map<int, std::string> root;
    ~Restore() {
      for (const auto& [g, shell] : root) {
        in_guest(g, {"usermod", "-s", shell, "root"});
        in_guest(g, {"usermod", "-s", "/bin/sh", "pwadmin"});
      }
    }
  } restore{root_shell};
  const std::string mount_point = "/mnt/pw shell " + hostile.substr(0, 120);
  const std::string probe_file = "/var/backups/pw shell probe " + hostile + "\n-line2";
  const std::string backup = "/var/backups/pathwarden/fstab.shell " + hostile.substr(0, 60);
  const fs::path work = fs::path(env_or("PW_LIGHT_WORK_DIR", "/tmp/pw-light-work")) / "shells";
  fs::create_directories(work);
  std::map<int, std::string> original;
  for (int g = 1; g <= 3; ++g) {
    original[g] = guest_file(g, "/etc/fstab");
    set_guest_file(g, "/etc/fstab", original[g] + cifs);
    REQUIRE(in_guest(g, {"sh", "-c",
                         "mkdir -p \"$(dirname \"$1\")\" && dd if=/dev/zero of=\"$1\" bs=1M count=1 status=none && "
                         "chmod -R a+rX /var/backups",
                         "sh", probe_file})
                .exit_code == 0);
  }
  int round_no = 0;
  for (const auto& round : rounds) {
    ++round_no;
    std::vector<std::string> hosts;
    const auto inventory = work / ("round" + std::to_string(round_no) + ".ini");
    {
      std::ofstream inv(inventory);
      for (int g = 1; g <= 3; ++g) {
        const auto& login = round[static_cast<std::size_t>(g - 1)];
        const std::string user = login.become ? "pwadmin" : "root";
        REQUIRE(in_guest(g, {"usermod", "-s", login.shell, user}).exit_code == 0);
        inv << guest_name(g) << " ansible_user=" << user << (login.become ? " ansible_become=true" : "") << "\n";
        hosts.push_back(guest_name(g));
      }
    }
    for (int g = 1; g <= 3; ++g) {
      INFO("round " << round_no << " guest" << g << ": " << round[static_cast<std::size_t>(g - 1)].shell
                    << (round[static_cast<std::size_t>(g - 1)].become ? " with become" : " as root"));
    }
    const std::string tag = "shells-" + std::to_string(round_no);
    auto facts = guest_facts_from(run_phase(tag, "facts", facts_playbook(hosts), {inventory}));
    std::vector<FstabChange> changes;
    std::vector<FstabRestore> restores;
    std::vector<ProbeRequest> probes;
    std::map<std::string, std::string> before, written;
    for (const auto& h : hosts) {
      INFO(h);
      REQUIRE(facts.at(h));
      const auto& f = *facts.at(h);
      before[h] = f.fstab_content;
      auto file = f.fstab;
      const std::string source = "src-" + hostile.substr(0, 80);
      REQUIRE(file.set_entry({source, mount_point, "tmpfs", {"size=1m", "x-note=-" + hostile.substr(0, 30)}, 0, 0},
                             {"policy " + hostile, "reason " + hostile + "\nsecond line " + long_value}));
      written[h] = file.print();
      changes.push_back({h,
                         f.fstab_sha256,
                         written[h],
                         backup,
                         {{mount_point, source, "tmpfs", {"size=1m"}, true}},
                         f.fstab_content});
      restores.push_back({h, backup, f.fstab_sha256, sha256_hex(written[h]), {{mount_point, "", "", {}, false}}});
      probes.push_back({h, probe_file, 1u << 20, ProbeDirection::read, 1u << 20});
    }
    auto apply = run_phase(tag, "apply", apply_playbook(changes), {inventory}, std::chrono::minutes(5), true);
    const auto seen = apply.stderr_text + [&] {
      std::string all;
      for (const auto& l : apply.other_output) all += l + "\n";
      return all;
    }();
    const auto scripts = sent_scripts(seen);
    CHECK(scripts.size() >= hosts.size());  // each guest's command line was seen
    CHECK(seen.find(secret) == std::string::npos);
    for (const auto& script : scripts) CHECK(script.find(secret) == std::string::npos);
    for (const auto& h : hosts) {
      INFO(h);
      CHECK(apply.host(h)->outcome == HostOutcome::changed);
      CHECK(guest_file(std::stoi(h.substr(5)), "/etc/fstab") == written[h]);
    }
    auto probe = run_phase(tag, "probe", probe_playbook(probes), {inventory});
    auto obs = probe_observations_from(probe);
    for (const auto& h : hosts) {
      INFO(h);
      REQUIRE(obs.at(h));
      REQUIRE(obs.at(h)->dd);
      CHECK(obs.at(h)->dd->bytes == 1u << 20);  // it read exactly that file
    }
    auto rollback = run_phase(tag, "rollback", rollback_playbook(restores), {inventory});
    for (const auto& h : hosts) {
      INFO(h);
      CHECK(rollback.host(h)->outcome == HostOutcome::changed);
      CHECK(guest_file(std::stoi(h.substr(5)), "/etc/fstab") == before[h]);
    }
  }
  for (int g = 1; g <= 3; ++g) {
    set_guest_file(g, "/etc/fstab", original[g]);
    for (const char* suffix : {"-a", "-b", "-c", "-d"}) {
      INFO("guest" << g << suffix);
      CHECK_FALSE(guest_has(g, marker + suffix));
      CHECK_FALSE(fs::exists(marker + suffix));  // the controller shares this machine's /tmp
    }
  }
}
