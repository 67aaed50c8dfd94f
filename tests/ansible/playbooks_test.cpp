// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/playbooks.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "example_requests.hpp"
#include "guest/change_script.hpp"
#include "guest/facts.hpp"
#include "guest/fstab_edit.hpp"
#include "guest/script_output.hpp"
#include "guest/tokens.hpp"
#include "text_files.hpp"

using namespace pw::ansible;
using namespace pw::guest;
namespace json = boost::json;

namespace {

// How every raw task's command starts (playbooks.cpp, script_task): the C locale (the tools'
// messages the controller reads are C's), the script and its arguments in one base64 value,
// then the guest's own time limit (300 s: PlaybookOptions' default).
constexpr std::string_view kScriptCommand = "env LC_ALL=C PW_SCRIPT={{ (";
constexpr std::string_view kScriptRunner = " | b64encode }} timeout -k 5 300 /bin/sh -c\n{{- ' ' }}{% raw %}'";

template <class T>
T value_of(pw::Result<T> r) {
  if (!r) FAIL(r.error().to_string());
  return std::move(*r);
}

std::vector<Playbook> all_playbooks() {
  auto hosts = examples::hosts();
  auto changes = examples::fstab_changes();
  auto restores = examples::fstab_restores();
  auto probes = examples::probes();
  auto channels = examples::channels();
  return {value_of(facts_playbook(hosts)), value_of(apply_playbook(changes)), value_of(rollback_playbook(restores)),
          value_of(probe_playbook(probes)), value_of(channels_playbook(channels))};
}

// Every string of the vars file must be wrapped as {"__ansible_unsafe": "..."}.
void check_all_strings_unsafe(const json::value& v, const std::string& path) {
  INFO(path);
  if (v.is_string()) FAIL("bare string at " + path + ": " + std::string(v.as_string()));
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.as_array().size(); ++i) check_all_strings_unsafe(v.as_array()[i], path + "[]");
  }
  if (v.is_object()) {
    const auto& o = v.as_object();
    if (o.contains("__ansible_unsafe")) {
      CHECK(o.size() == 1);
      CHECK(o.at("__ansible_unsafe").is_string());
      return;
    }
    for (const auto& [k, item] : o) check_all_strings_unsafe(item, path + "." + std::string(k));
  }
}

std::vector<std::string> module_names(const YAML::Node& play) {
  std::vector<std::string> out;
  for (const auto& task : play["tasks"]) {
    for (const auto& kv : task) {
      auto key = kv.first.as<std::string>();
      if (key.find('.') != std::string::npos) out.push_back(key);
    }
  }
  return out;
}

std::string unwrap(const json::value& v) {
  return std::string(v.at("__ansible_unsafe").as_string());
}

}  // namespace

TEST_CASE("playbooks are one play for all their guests, each task a raw script: no Python in the guest") {
  auto playbooks = all_playbooks();
  pw::guest::FactsRequests docker;
  docker["guest1"].docker_volumes = true;
  playbooks.push_back(value_of(facts_playbook(examples::hosts(), {}, docker)));
  for (const auto& p : playbooks) {
    INFO(p.name);
    auto doc = YAML::Load(p.yaml);
    REQUIRE(doc.IsSequence());
    REQUIRE(doc.size() == 1);
    auto play = doc[0];
    CHECK(play["gather_facts"].as<bool>() == false);
    std::vector<std::string> hosts;
    for (const auto& h : play["hosts"]) hosts.push_back(h.as<std::string>());
    CHECK(hosts == p.hosts);
    // raw only: a constant script whose arguments are the validated fstab path or, from the vars
    // file, values through Ansible's `quote` filter. No module, so nothing needs Python there.
    for (const auto& m : module_names(play)) CHECK(m == "ansible.builtin.raw");
    for (const auto& task : play["tasks"]) {
      const auto name = task["name"].as<std::string>();
      CHECK((name == task::report || name == task::docker_volumes || name == task::probe || name == task::apply ||
             name == task::rollback || name == task::set_channels));
      const auto command = task["ansible.builtin.raw"].as<std::string>();
      CHECK(command.starts_with(kScriptCommand));
      CHECK(command.find(kScriptRunner) != std::string::npos);
      CHECK(task["vars"]["pathwarden_script"].as<std::string>().find("set -u\n") != std::string::npos);
      CHECK(task["timeout"].as<int>() == 315);  // Ansible's own limit comes after the guest's
      CHECK(task["vars"]["ansible_ssh_use_tty"].as<bool>() == false);
    }
  }
}

TEST_CASE("policy values live only in the vars file, every string marked unsafe") {
  for (const auto& p : all_playbooks()) {
    INFO(p.name);
    CHECK(p.yaml.find("touch /tmp/pw-injected") == std::string::npos);
    CHECK(p.yaml.find("10.0.1.31") == std::string::npos);
    if (p.name == "facts") {
      CHECK(p.vars_json.empty());
      continue;
    }
    auto play = YAML::Load(p.yaml)[0];
    CHECK(play["vars_files"][0].as<std::string>() == p.vars_file());
    CHECK(play["vars"]["pathwarden_host"].as<std::string>() == "{{ pathwarden_hosts[inventory_hostname] }}");
    auto vars = json::parse(p.vars_json);
    std::set<std::string> keys;
    for (const auto& [host, data] : vars.at("pathwarden_hosts").as_object()) keys.insert(std::string(host));
    CHECK(keys == std::set<std::string>(p.hosts.begin(), p.hosts.end()));
    check_all_strings_unsafe(vars, "vars");
  }
}

static std::vector<std::string> unwrap_list(const json::value& v) {
  std::vector<std::string> out;
  for (const auto& item : v.as_array()) out.push_back(unwrap(item));
  return out;
}

TEST_CASE("the apply data: hashes, an edit of the observed file, backup, unmount in reverse then mount") {
  auto changes = examples::fstab_changes();
  auto p = value_of(apply_playbook(changes));
  auto g1 = json::parse(p.vars_json).at("pathwarden_hosts").at("guest1");
  const auto old_line = changes[0].observed_content;
  CHECK(unwrap_list(g1.at("apply_args")) ==
        std::vector<std::string>{changes[0].observed_sha256, pw::guest::sha256_hex(changes[0].new_content),
                                 "/var/backups/pathwarden/fstab.change-1",
                                 // the edit: the observed line copied by its bytes, then the new lines
                                 "5", "c", "0", std::to_string(old_line.size()), "t",
                                 changes[0].new_content.substr(old_line.size()),
                                 // two to unmount, inner (later) first, each with its /proc/mounts text
                                 "2", "/mnt/other", "/mnt/other", "/mnt/movies", "/mnt/movies",
                                 // then mounted in order: path, its text, source, type, options
                                 "/mnt/movies", "/mnt/movies", "10.0.1.31:/volume1/movies", "nfs", "vers=3,nconnect=8",
                                 "/mnt/other", "/mnt/other", "10.0.1.31:/volume1/other", "nfs", "defaults"});
  // One task: the script's stages replace the ten module tasks.
  auto play = YAML::Load(p.yaml)[0];
  REQUIRE(play["tasks"].size() == 1);
  CHECK(play["tasks"][0]["name"].as<std::string>() == task::apply);
  CHECK(play["tasks"][0]["changed_when"].as<bool>());
  auto guest2 = unwrap_list(json::parse(p.vars_json).at("pathwarden_hosts").at("guest2").at("apply_args"));
  CHECK(guest2[4] == "t");
  CHECK(guest2[5] == examples::kHostile);  // a new line, whole, one argument
  CHECK(guest2[8] == proc_mounts_escaped(changes[1].activations[0].path));
  CHECK(proc_mounts_escaped("/mnt/a b\\c\td\ne") == "/mnt/a\\040b\\134c\\011d\\012e");
}

TEST_CASE("the rollback data: only unmount entries that did not exist before") {
  auto p = value_of(rollback_playbook(examples::fstab_restores()));
  auto g1 = json::parse(p.vars_json).at("pathwarden_hosts").at("guest1");
  CHECK(unwrap_list(g1.at("rollback_args")) ==
        std::vector<std::string>{"/var/backups/pathwarden/fstab.change-1", pw::guest::sha256_hex("a"),
                                 pw::guest::sha256_hex("b"), "2", "/mnt/other", "/mnt/other", "/mnt/movies",
                                 "/mnt/movies", "/mnt/other", "/mnt/other", "10.0.1.31:/volume1/other", "nfs",
                                 "defaults"});
}

TEST_CASE("probe and channels commands are argv lists with the values as single arguments") {
  auto probe = value_of(probe_playbook(examples::probes()));
  auto hosts = json::parse(probe.vars_json).at("pathwarden_hosts");
  // The probe script's arguments: baseline seconds, the file to remove after, commit cycles and
  // their file, the direction, the mount point and the file it checks, then dd's argv
  // (guest/probe_report.hpp), each through Ansible's `quote` filter.
  auto args_of = [&](const char* host) {
    std::vector<std::string> out;
    for (const auto& a : hosts.at(host).at("probe_args").as_array()) out.push_back(unwrap(a));
    return out;
  };
  // dd opens no link and does not block on a FIFO (the script refused one before).
  CHECK(args_of("guest1") == std::vector<std::string>{"0", "", "0", "", "read", "/mnt/movies", "/mnt/movies/probe.bin",
                                                      "dd", "if=/mnt/movies/probe.bin", "of=/dev/null", "bs=1048576",
                                                      "count=256", "iflag=direct,nofollow,nonblock"});
  auto argv = args_of("guest2");
  CHECK(argv[1] == "/mnt/" + examples::kHostile);  // a write probe's file is removed after
  CHECK(argv[4] == "write");
  CHECK(argv[9] == "of=/mnt/" + examples::kHostile);
  CHECK(argv[12] == "oflag=direct,nofollow");
  // A write probe never overwrites a file that is there, so its removal afterwards removes only
  // what it wrote (and not when dd refused because the name was taken).
  CHECK(argv[13] == "conv=fsync,excl");
  CHECK(probe.yaml.find("(pathwarden_host.probe_args | map('quote') | join(' '))") != std::string::npos);
  // A read probe as the SSH user, a write probe as root.
  CHECK_FALSE(hosts.at("guest1").at("probe_become").as_bool());
  CHECK(hosts.at("guest2").at("probe_become").as_bool());

  auto channels = value_of(channels_playbook(examples::channels()));
  auto channel_vars = json::parse(channels.vars_json);
  argv.clear();
  for (const auto& a : channel_vars.at("pathwarden_hosts").at("guest1").at("channels_args").as_array()) {
    argv.push_back(unwrap(a));
  }
  CHECK(argv == std::vector<std::string>{"ens19", "8", "set"});
  // A rollback's request says so: the guest skips a NIC whose count did not move
  // (tests/guest/channels_script_test.cpp runs the script).
  auto restore = examples::channels();
  for (auto& r : restore) r.restore = true;
  auto restore_vars = json::parse(value_of(channels_playbook(restore)).vars_json);
  CHECK(unwrap(restore_vars.at("pathwarden_hosts").at("guest1").at("channels_args").as_array().back()) == "restore");
  CHECK(set_channels_script().ends_with("exec ethtool -L \"$1\" combined \"$2\"\n"));
}

namespace {

std::string base64(std::string_view bytes) {
  return pw::testing::base64(bytes);
}

// The raw task's command as Ansible would send it, rendered by hand: its one Jinja expression
// (the host's argument list through the `quote` filter as "set -- ARGS;", then the task's
// pathwarden_script between its raw tags, through `b64encode`), the raw tags dropped and the
// lines joined. `args`: the host's list, for a task that has one.
std::string rendered(const YAML::Node& task, const std::optional<std::vector<std::string>>& args = std::nullopt) {
  auto command = task["ansible.builtin.raw"].as<std::string>();
  auto script = task["vars"]["pathwarden_script"].as<std::string>();
  while (script.ends_with('\n')) script.pop_back();  // a YAML block scalar's own newline
  REQUIRE(script.starts_with("{% raw %}"));
  REQUIRE(script.ends_with("{% endraw %}"));
  script = script.substr(9, script.size() - 9 - 12);
  const auto open = command.find("{{ (");
  const auto close = command.find(" | b64encode }}");
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  const auto expr = command.substr(open, close + 15 - open);
  auto flat = expr;  // the expression as one line (the generator breaks it for the line length)
  for (std::size_t at; (at = flat.find("\n   ")) != std::string::npos;) flat.replace(at, 4, " ");
  std::string prefix;
  if (args) {
    REQUIRE(flat.find(" | map('quote') | join(' ')) ~ ';') ~ pathwarden_script)") != std::string::npos);
    prefix = "set --";
    for (const auto& a : *args) prefix += " " + shell_quote(a);
    prefix += ";";
  } else {
    REQUIRE(flat == "{{ ('' ~ pathwarden_script) | b64encode }}");
  }
  command.replace(open, expr.size(), base64(prefix + script));
  for (std::size_t at; (at = command.find("\n{{- ' ' }}")) != std::string::npos;) command.replace(at, 11, " ");
  for (std::string marker : {"{% raw %}", "{% endraw %}"}) {
    REQUIRE(command.find(marker) != std::string::npos);
    for (std::size_t at; (at = command.find(marker)) != std::string::npos;) command.erase(at, marker.size());
  }
  REQUIRE(command.find("{{") == std::string::npos);
  REQUIRE(command.find("{%") == std::string::npos);
  return command;
}

std::string run_sh(const std::string& command) {
  auto dir = std::filesystem::temp_directory_path() / ("pw-report-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "cmd") << command; }
  const auto out = dir / "out";
  // The login shell runs the raw command: here the test's /bin/sh does.
  REQUIRE(std::system(("/bin/sh " + (dir / "cmd").string() + " >" + out.string()).c_str()) == 0);
  std::string text = pw::testing::whole_file(out);
  std::filesystem::remove_all(dir);
  return text;
}

struct ShRun {
  int rc = -1;
  std::string out, err;
};

ShRun run_sh_full(const std::string& command) {
  auto dir = std::filesystem::temp_directory_path() / ("pw-sh-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cmd") << command;
  const int status = std::system(
      ("/bin/sh " + (dir / "cmd").string() + " >" + (dir / "out").string() + " 2>" + (dir / "err").string()).c_str());
  ShRun r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, pw::testing::whole_file(dir / "out"),
          pw::testing::whole_file(dir / "err")};
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace

TEST_CASE("the fstab scripts under /bin/sh: compare-and-swap, backup, atomic write, refusal, restore") {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("pw-change-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto fstab = dir / "fstab";
  const auto backups = dir / "backups";
  auto put = [](const fs::path& f, const std::string& text) { std::ofstream(f, std::ios::trunc) << text; };
  auto read = [](const fs::path& f) { return pw::testing::whole_file_or_empty(f); };
  auto perms = [](const fs::path& f) { return fs::status(f).permissions() & fs::perms::all; };
  auto stages = [](const ShRun& r) {
    auto report = parse_change_report(r.out, "guest1");
    REQUIRE(report);
    return *report;
  };
  const std::string old_content = "UUID=abc / ext4 defaults 0 1\n";
  put(fstab, old_content);
  fs::permissions(fstab, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read,
                  fs::perm_options::replace);
  PlaybookOptions o;
  o.fstab_path = fstab.string();
  // The hostile text of the examples, whole, in the new content: data, never code.
  FstabChange change{"guest1",
                     sha256_hex(old_content),
                     old_content + "# " + examples::kHostile + "\n",
                     (backups / "fstab.change-1").string(),
                     {},
                     old_content};
  FstabRestore restore{"guest1", change.backup_path, change.observed_sha256, sha256_hex(change.new_content), {}};
  auto command = [&](const Playbook& p, const char* list) {
    auto args = unwrap_list(json::parse(p.vars_json).at("pathwarden_hosts").at("guest1").at(list));
    return rendered(YAML::Load(p.yaml)[0]["tasks"][0], args);
  };
  const auto apply = command(value_of(apply_playbook(std::span(&change, 1), o)), "apply_args");
  const auto rollback = command(value_of(rollback_playbook(std::span(&restore, 1), o)), "rollback_args");
  using S = ChangeStage;

  auto r = run_sh_full(apply);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(read(fstab) == change.new_content);
  CHECK(perms(fstab) == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));  // kept
  CHECK(read(change.backup_path) == old_content);
  CHECK(perms(change.backup_path) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(perms(backups) == fs::perms::owner_all);
  CHECK(stages(r).stages ==
        std::vector<S>{S::read, S::refuse, S::backup, S::write, S::check_written, S::unmount, S::mount});
  CHECK(stages(r).finished);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  CHECK(names == std::set<std::string>{"backups", "fstab"});  // no temporary file left

  // A retry of the same change once written: accepted, its backup is there and still the old file.
  CHECK(run_sh_full(apply).rc == 0);
  CHECK(read(change.backup_path) == old_content);

  // Someone edits after the write: the rollback refuses and the edit stays.
  put(fstab, change.new_content + "# edited after pathwarden wrote\n");
  r = run_sh_full(rollback);
  CHECK(r.rc == 1);
  CHECK(r.err == "the fstab changed since pathwarden wrote it; restore the backup by hand if still wanted\n");
  CHECK(stages(r).last() == S::refuse);
  CHECK(read(fstab) == change.new_content + "# edited after pathwarden wrote\n");

  // The rollback of the change as written: the backup back, byte for byte, mode kept.
  put(fstab, change.new_content);
  r = run_sh_full(rollback);
  CHECK(r.rc == 0);
  CHECK(read(fstab) == old_content);
  CHECK(perms(fstab) == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  CHECK(stages(r).reached(S::restore));
  // Again: nothing to restore, the mounts are still re-made.
  r = run_sh_full(rollback);
  CHECK(r.rc == 0);
  CHECK_FALSE(stages(r).reached(S::restore));
  CHECK(stages(r).reached(S::mount));

  // The new content there without this change's backup is another controller's change: refused,
  // nothing touched (no backup made).
  fs::remove_all(backups);
  put(fstab, change.new_content);
  r = run_sh_full(apply);
  CHECK(r.rc == 1);
  CHECK(r.err == "the fstab changed since pathwarden observed it; gather facts and plan again\n");
  CHECK(stages(r).last() == S::refuse);
  CHECK_FALSE(fs::exists(backups));

  // A missing fstab is refused the same way.
  fs::remove(fstab);
  CHECK(stages(run_sh_full(apply)).last() == S::refuse);
  fs::remove_all(dir);
}

TEST_CASE("the guest keeps a script's exit status and cuts its output at the caps") {
  // The runner every raw command starts (playbooks.cpp): the script's own status comes back
  // through the caps' pipes; output past the cap ends the script (SIGPIPE) instead of reaching
  // ansible-playbook's memory. Run by this machine's /bin/sh with scripts of the test's own.
  auto task = YAML::Clone(YAML::Load(value_of(facts_playbook(std::vector<std::string>{"g"})).yaml)[0]["tasks"][0]);
  auto with_script = [&](const std::string& script) {
    task["vars"]["pathwarden_script"] = "{% raw %}" + script + "{% endraw %}";
    return run_sh_full(rendered(task));
  };
  auto small = with_script("printf 'out\\n'; printf 'err\\n' >&2; exit 7\n");
  CHECK(small.rc == 7);
  CHECK(small.out == "out\n");
  CHECK(small.err == "err\n");
  // Nothing after the cut arrives: the report lacks its end mark, so it is refused as
  // incomplete. (The shell dies writing on SIGPIPE where it is not ignored; under a parent that
  // ignores it, as a test runner may, its writes fail instead: the status is not asserted.)
  auto big = with_script("head -c 20000000 /dev/zero; echo done; exit 0\n");
  CHECK(big.out.size() == (std::size_t{16} << 20));
  CHECK(big.out.find("done") == std::string::npos);
  auto loud = with_script("head -c 100000 /dev/zero >&2; exit 0\n");
  CHECK(loud.err.size() == (std::size_t{64} << 10));
}

TEST_CASE("the facts playbook is one raw task: the report script, byte for byte, under /bin/sh") {
  std::vector<std::string> hosts{"a", "b", "a"};
  auto p = value_of(facts_playbook(hosts));
  CHECK(p.hosts == std::vector<std::string>{"a", "b"});
  auto play = YAML::Load(p.yaml)[0];
  // One task: every task costs each guest a worker fork and an SSH exchange on the controller,
  // and raw starts no Python in the guest. It carries no stdin either, so that SSH's own
  // refusal (a host key that is not the pinned one) reaches the report.
  REQUIRE(play["tasks"].size() == 1);
  const auto task = play["tasks"][0];
  CHECK(task["name"].as<std::string>() == task::report);
  CHECK(task["changed_when"].as<bool>() == false);
  CHECK(task["vars"]["ansible_ssh_use_tty"].as<bool>() == false);
  auto command = task["ansible.builtin.raw"].as<std::string>();
  while (command.ends_with('\n')) command.pop_back();  // a YAML block scalar's own newline
  CHECK(command.starts_with(kScriptCommand));
  CHECK(command.ends_with(" sh{% endraw %}"));
  // The fstab's path, ours and validated, is the script's own first line.
  CHECK(task["vars"]["pathwarden_script"].as<std::string>().starts_with("{% raw %}set -- '/etc/fstab' \"$@\"\n"));
  // Nothing the login shell parses holds a backslash or a quoted quote, which fish and csh read
  // differently from sh (the script itself travels base64-encoded).
  CHECK(command.find('\\') == std::string::npos);
  CHECK(command.find("'\\''") == std::string::npos);

  // Run it as the guest's shell would, the fstab a file of our own: the script arrives whole
  // (its own quotes survive the quoting) and reads that file.
  auto fstab = std::filesystem::temp_directory_path() / ("pw-fstab-" + std::to_string(::getpid()));
  const std::string content = "# it's mine\n198.51.100.2:/tank/media /mnt/media nfs4 vers=4.1 0 0\n";
  std::ofstream(fstab) << content;
  PlaybookOptions o;
  o.fstab_path = fstab.string();
  auto own = value_of(facts_playbook(hosts, o));
  auto text = run_sh(rendered(YAML::Load(own.yaml)[0]["tasks"][0]));
  auto output = value_of(split_script_output(text, "facts report", "a"));
  CHECK(output.finished);
  REQUIRE(!output.sections.empty());
  CHECK(output.sections[0].words == std::vector<std::string>{"fstab"});
  CHECK(decode_base64(output.sections[0].body) == content);
  std::map<std::string, std::string> body;
  for (const auto& s : output.sections) {
    std::string name;
    for (const auto& w : s.words) name += (name.empty() ? "" : " ") + w;
    body[name] = s.body;
    CHECK_FALSE(name.starts_with("resolve"));
  }
  // One-line values come from the shell's own `read`, not a cat each: the boot id and the
  // loopback device as this machine's kernel reports them (lo is ifindex 1 in every namespace).
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  std::getline(boot, boot_id);
  CHECK(body["boot_id"] == boot_id + "\n");
  const auto& lo_block = body["iface lo"];
  CHECK(lo_block.starts_with("ifindex 1\naddress 00:00:00:00:00:00\n"));
  CHECK(lo_block.find("\nspeed \noperstate unknown\nmtu 65536\nrx_queues 1\ntx_queues 1\n") != std::string::npos);
  // Each run its own token: a second run's marks are not the first's.
  auto again = run_sh(rendered(YAML::Load(own.yaml)[0]["tasks"][0]));
  CHECK(again.substr(0, again.find('\n')) != text.substr(0, text.find('\n')));
  std::filesystem::remove(fstab);
}

TEST_CASE("the probe playbook holds only the tasks some guest of the run needs") {
  auto names = [](const std::vector<ProbeRequest>& probes) {
    std::vector<std::string> out;
    for (const auto& t : YAML::Load(value_of(probe_playbook(probes)).yaml)[0]["tasks"]) {
      out.push_back(t["name"].as<std::string>());
    }
    return out;
  };
  // One probe task, whatever the guests ask for: the probe script does the baseline, the counters
  // around dd, the clean-up and the commit cycles (each task would cost every guest a worker
  // fork on the controller, and Python started between the counter reads would widen the window).
  // Then the facts report, outside the counter window: the evidence after the probe, read in the
  // same run instead of a facts run of its own.
  const std::vector<std::string> expected{task::probe, task::report};
  auto reads = examples::probes();
  reads.pop_back();
  CHECK(names(reads) == expected);
  auto mixed = examples::probes();
  mixed[0].baseline = std::chrono::milliseconds(2000);
  mixed[1].commit_cycles = 8;
  mixed[1].commit_path = "/mnt/other/.pathwarden-commit";
  CHECK(names(mixed) == expected);
  // The report as the facts phase runs it: the fstab's path its argument, as the SSH user where
  // the probe's dd runs as root.
  PlaybookOptions become;
  become.become = Become{};
  const auto tasks = YAML::Load(value_of(probe_playbook(mixed, become)).yaml)[0]["tasks"];
  CHECK(tasks[0]["become"].as<std::string>() == "{{ pathwarden_host.probe_become }}");
  CHECK(!tasks[1]["become"]);
  CHECK(tasks[1]["vars"]["pathwarden_script"].as<std::string>().starts_with("{% raw %}set -- '/etc/fstab' \"$@\""));
  auto vars = json::parse(value_of(probe_playbook(mixed)).vars_json).at("pathwarden_hosts");
  CHECK(unwrap(vars.at("guest1").at("probe_args").as_array()[0]) == "2.000");
  CHECK(unwrap(vars.at("guest2").at("probe_args").as_array()[2]) == "8");
  CHECK(unwrap(vars.at("guest2").at("probe_args").as_array()[3]) == "/mnt/other/.pathwarden-commit");
  // The policy may ask for a read probe as root.
  mixed[0].as_root = true;
  vars = json::parse(value_of(probe_playbook(mixed)).vars_json).at("pathwarden_hosts");
  CHECK(vars.at("guest1").at("probe_become").as_bool());
}

TEST_CASE("requests that cannot run safely are refused with the guest named") {
  auto error_of = [](auto r) { return r ? std::string("no error") : r.error().to_string(); };
  std::vector<std::string> bad_host{"web 1"};
  CHECK(error_of(facts_playbook(bad_host)).starts_with("web 1: guest name 'web 1' cannot be used in a playbook"));
  std::vector<std::string> pattern{"all:!db"};
  CHECK_FALSE(facts_playbook(pattern));
  std::vector<std::string> none;
  CHECK_FALSE(facts_playbook(none));

  auto changes = examples::fstab_changes();
  changes[1].host = "guest1";
  CHECK(error_of(apply_playbook(changes)) ==
        "guest1: guest appears twice in one apply run (merge its changes into one request)");
  changes = examples::fstab_changes();
  changes[0].observed_sha256 = "abc";
  CHECK(error_of(apply_playbook(changes)).find("is not a lower-case hex SHA-256") != std::string::npos);
  changes = examples::fstab_changes();
  changes[0].backup_path = "backups/fstab";
  CHECK(error_of(apply_playbook(changes)).find("backup path 'backups/fstab' is not an absolute path") !=
        std::string::npos);
  changes = examples::fstab_changes();
  changes[0].activations[0].options = {"vers=3,nconnect=8"};
  CHECK(error_of(apply_playbook(changes)).find("holds a comma") != std::string::npos);
  changes = examples::fstab_changes();
  changes[0].activations[0].fstype.clear();
  CHECK(error_of(apply_playbook(changes)).find("needs a source and a filesystem type") != std::string::npos);

  std::vector<ProbeRequest> probes{{"g", "/mnt/x", 0}};
  CHECK(error_of(probe_playbook(probes)) == "g: probe of 0 bytes (give probe_bytes > 0)");
  probes = {{"g", "/mnt/x", 10, ProbeDirection::read, 1000}};
  CHECK_FALSE(probe_playbook(probes));

  std::vector<ChannelsRequest> channels{{"g", "eth0; reboot", 2}};
  CHECK(error_of(channels_playbook(channels)).find("is not a network interface name") != std::string::npos);
  channels = {{"g", "eth0", 0}};
  CHECK_FALSE(channels_playbook(channels));

  PlaybookOptions options;
  options.fstab_path = "/etc/fstab; id";
  std::vector<std::string> ok{"g"};
  CHECK_FALSE(facts_playbook(ok, options));
}

TEST_CASE("playbooks are written as NAME.yml and NAME.vars.json") {
  auto dir = std::filesystem::temp_directory_path() / ("pw-playbooks-" + std::to_string(::getpid()));
  auto playbooks = all_playbooks();
  REQUIRE(write_playbooks(playbooks, dir));
  for (const auto& p : playbooks) {
    CHECK(pw::testing::whole_file(dir / p.yaml_file()) == p.yaml);
    CHECK(std::filesystem::exists(dir / p.vars_file()) == !p.vars_json.empty());
  }
  std::filesystem::remove_all(dir);
  CHECK_FALSE(write_playbooks(playbooks, "/proc/pathwarden-cannot-write-here"));
}

TEST_CASE("become covers what needs root and nothing else, and is named only when asked for") {
  PlaybookOptions o;
  o.become = Become{"root", "sudo"};
  auto become_of = [](const YAML::Node& n) { return n["become"] ? n["become"].as<bool>() : false; };
  // The plays that change the guest become as a whole.
  for (const auto& p : {value_of(apply_playbook(examples::fstab_changes(), o)),
                        value_of(rollback_playbook(examples::fstab_restores(), o)),
                        value_of(channels_playbook(examples::channels(), o))}) {
    INFO(p.name);
    auto play = YAML::Load(p.yaml)[0];
    CHECK(become_of(play));
    CHECK(play["become_user"].as<std::string>() == "root");
    CHECK(play["become_method"].as<std::string>() == "sudo");
  }
  // Facts run as the SSH user, no become keyword; the script checks that sudo will not ask, told
  // by Ansible whether the inventory gives a password (two fixed words, no host data). The probe
  // (dd, its clean-up, the counter reads around it) runs as root.
  const auto facts = value_of(facts_playbook(examples::hosts(), o)).yaml;
  CHECK(facts.find("become:") == std::string::npos);
  CHECK(facts.find("ternary('PW_SUDO_CHECK=given;', 'PW_SUDO_CHECK=ask;')") != std::string::npos);
  CHECK(facts.find("ansible_become_password is defined") != std::string::npos);
  PlaybookOptions su = o;
  su.become->method = "su";  // another become plugin: sudo's answer says nothing about it
  CHECK(value_of(facts_playbook(examples::hosts(), su)).yaml.find("ternary(") == std::string::npos);
  CHECK(value_of(facts_playbook(examples::hosts(), {})).yaml.find("ternary(") == std::string::npos);
  auto probes = examples::probes();
  probes[0].commit_cycles = 16;
  probes[0].commit_path = "/mnt/movies/.pathwarden-commit";
  auto probe = YAML::Load(value_of(probe_playbook(probes, o)).yaml)[0];
  CHECK_FALSE(become_of(probe));
  // The probe task becomes per host as its request says (a read probe as the SSH user); the
  // report after it never does.
  CHECK(probe["tasks"][0]["name"].as<std::string>() == task::probe);
  CHECK(probe["tasks"][0]["become"].as<std::string>() == "{{ pathwarden_host.probe_become }}");
  CHECK(!probe["tasks"][1]["become"]);
  // Without it the playbooks leave become to Ansible's own configuration.
  for (const auto& p : all_playbooks()) CHECK(p.yaml.find("become") == std::string::npos);
  // Ansible templates keywords: only plain names get in.
  o.become = Become{"{{ lookup('pipe', 'id') }}", ""};
  CHECK_FALSE(apply_playbook(examples::fstab_changes(), o));
  o.become = Become{"", "sudo -s"};
  CHECK_FALSE(probe_playbook(examples::probes(), o));
  CHECK(validate_become(Become{"svc-backup.ops", "community.general.doas"}));
}

TEST_CASE("NAS names are resolved by the guest's resolver, each name one quoted argument") {
  const std::vector<std::string> hosts{"media-vm", "backup-vm"};
  auto plain = value_of(facts_playbook(hosts));
  CHECK(plain.vars_json.empty());  // no names: no vars file, a constant command
  // Its only Jinja: the script's encoding and the line join, no per-host value.
  CHECK(plain.yaml.find("pathwarden_host") == std::string::npos);
  auto p = value_of(facts_playbook(hosts, {}, {{"media-vm", {.names = {"truenas.lan"}}}}));
  auto play = YAML::Load(p.yaml)[0];
  REQUIRE(play["tasks"].size() == 1);  // still the one task: the script resolves them
  auto command = play["tasks"][0]["ansible.builtin.raw"].as<std::string>();
  while (command.ends_with('\n')) command.pop_back();  // a YAML block scalar's own newline
  CHECK(command.find(
            "{{ (('set -- ' ~ (pathwarden_host.names | map('quote') | join(' ')) ~ ';')\n   ~ pathwarden_script)") !=
        std::string::npos);
  auto vars = json::parse(p.vars_json);
  CHECK(unwrap(vars.at("pathwarden_hosts").at("media-vm").at("names").as_array().at(0)) == "truenas.lan");
  CHECK(vars.at("pathwarden_hosts").at("backup-vm").at("names").as_array().empty());
  CHECK_FALSE(facts_playbook(hosts, {}, {{"media-vm", {.names = {"nas; reboot"}}}}));

  // The script's own resolver run: "localhost" resolves, a name under .invalid (RFC 6761) never
  // does and still gets its (empty) section, so the planner can tell "asked, no address".
  auto text = run_sh(rendered(play["tasks"][0], std::vector<std::string>{"localhost", "nothing.invalid"}));
  auto facts = parse_guest_report(text, "media-vm");
  REQUIRE(facts);
  REQUIRE(facts->resolved.size() == 2);
  CHECK_FALSE(facts->resolved.at("localhost").empty());
  CHECK(facts->resolved.at("nothing.invalid").empty());
}
