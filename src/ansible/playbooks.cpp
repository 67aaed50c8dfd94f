// SPDX-License-Identifier: GPL-3.0-or-later
// Over 400 lines on purpose: the phase playbooks share one vocabulary (the raw script task, the
// play, the vars file's unsafe values, the checks of values; below, in the anonymous namespaces);
// apart they would copy it.
#include "ansible/playbooks.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <set>

#include "ansible/yaml_tree.hpp"
#include "files/atomic_write.hpp"
#include "guest/change_script.hpp"
#include "guest/docker_volumes.hpp"
#include "guest/ethtool.hpp"
#include "guest/facts.hpp"
#include "guest/probe_report.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"
#include "guest/transport_move.hpp"

namespace pw::ansible {

using guest::ChannelsRequest;
using guest::FstabChange;
using guest::FstabRestore;
using guest::MountActivation;
using guest::ProbeDirection;
using guest::ProbeRequest;

namespace json = boost::json;

namespace {

constexpr const char* kHostVar = "{{ pathwarden_hosts[inventory_hostname] }}";

// Ansible never templates a string wrapped like this (AnsibleJSONDecoder turns it into unsafe text).
json::object unsafe(const std::string& s) {
  return json::object{{"__ansible_unsafe", s}};
}

json::array unsafe_list(const std::vector<std::string>& items) {
  json::array out;
  for (const auto& s : items) out.push_back(unsafe(s));
  return out;
}

bool is_hex_sha256(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

Status require_absolute(const std::string& path, std::string_view what, const std::string& host) {
  if (path.empty() || path.front() != '/') {
    return fail(std::string(what) + " '" + path + "' is not an absolute path", host, "give the full path from /");
  }
  if (path.find('\0') != std::string::npos) return fail(std::string(what) + " contains a NUL byte", host);
  return {};
}

Status require_sha256(const std::string& value, std::string_view what, const std::string& host) {
  if (!is_hex_sha256(value)) {
    return fail(std::string(what) + " '" + value + "' is not a lower-case hex SHA-256", host,
                "use the hash from the guest's facts (GuestFacts::fstab_sha256)");
  }
  return {};
}

// A value from our own configuration that appears in the YAML itself: kept to a plain charset.
Status validate_fstab_path(const std::string& path) {
  if (path.empty() || path.front() != '/' ||
      path.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") !=
          std::string::npos) {
    return fail("fstab path '" + path + "' must be absolute and use only letters, digits and / . _ -");
  }
  return {};
}

template <class Request>
Result<std::vector<std::string>> hosts_of(std::span<const Request> requests, std::string_view phase) {
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  if (requests.empty()) return fail(std::string(phase) + " playbook without any guest", {}, "nothing to run");
  for (const auto& r : requests) {
    if (auto s = validate_host_name(r.host); !s) return std::unexpected(s.error());
    if (!seen.insert(r.host).second) {
      return fail("guest appears twice in one " + std::string(phase) + " run", r.host,
                  "merge its changes into one request");
    }
    hosts.push_back(r.host);
  }
  return hosts;
}

YamlList host_list(const std::vector<std::string>& hosts) {
  YamlList out;
  for (const auto& h : hosts) out.emplace_back(h);
  return out;
}

// Whether a task (or a whole play) needs root on the guest; see Become.
enum class Privilege : std::uint8_t { ssh_user, root };

void add_become(YamlMap& keywords, Privilege privilege, const PlaybookOptions& options) {
  if (privilege != Privilege::root || !options.become) return;
  keywords.emplace_back("become", true);
  if (!options.become->user.empty()) keywords.emplace_back("become_user", options.become->user);
  if (!options.become->method.empty()) keywords.emplace_back("become_method", options.become->method);
}

Yaml play(const std::string& name, const std::vector<std::string>& hosts, const std::string& vars_file, YamlList tasks,
          const PlaybookOptions& options, Privilege privilege) {
  YamlMap p{{"name", name}, {"hosts", host_list(hosts)}, {"gather_facts", false}};
  add_become(p, privilege, options);
  if (!vars_file.empty()) {
    p.emplace_back("vars_files", YamlList{vars_file});
    p.emplace_back("vars", YamlMap{{"pathwarden_host", kHostVar}});
  }
  p.emplace_back("tasks", std::move(tasks));
  return YamlList{Yaml(std::move(p))};
}

std::string vars_document(json::object per_host) {
  json::object root;
  root["pathwarden_hosts"] = std::move(per_host);
  return json::serialize(root) + "\n";
}

Status validate_activations(const std::vector<MountActivation>& activations, const std::string& host) {
  for (const auto& a : activations) {
    if (auto s = require_absolute(a.path, "mount point", host); !s) return s;
    if (a.mount && (a.source.empty() || a.fstype.empty())) {
      return fail("mount of " + a.path + " needs a source and a filesystem type", host);
    }
    for (const auto& o : a.options) {
      if (o.empty() || o.find(',') != std::string::npos) {
        return fail("mount option '" + o + "' for " + a.path + " is empty or holds a comma", host,
                    "give each option separately");
      }
    }
  }
  return {};
}

// Ansible's own limit on a task comes this long after the guest's: time for `timeout -k 5` and
// for the guest's report to come back over SSH.
constexpr long long kAnsibleGrace = 15;

// Everything a host's task is sent must fit in the one SSH command: Linux caps one argument
// (the login shell's -c) at 128 KiB, and base64 makes four bytes of three.
constexpr std::size_t kMaxHostArgBytes = std::size_t{64} << 10;

Status fits_command(const std::vector<std::string>& argv, const std::string& host) {
  std::size_t total = 0;
  for (const auto& a : argv) total += a.size() + 3;
  if (total > kMaxHostArgBytes) {
    return fail("the values for this guest's script are " + std::to_string(total >> 10) +
                    " KiB, more than one SSH command carries (" + std::to_string(kMaxHostArgBytes >> 10) + " KiB)",
                host, "split the guest's policies over more runs (--policy)");
  }
  return {};
}

Playbook finish(std::string name, std::vector<std::string> hosts, const Yaml& root, std::string vars_json) {
  Playbook p;
  p.name = std::move(name);
  p.yaml = emit_yaml_document(root);
  p.vars_json = std::move(vars_json);
  p.hosts = std::move(hosts);
  return p;
}

}  // namespace

Status validate_host_name(std::string_view host) {
  constexpr std::string_view allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  if (host.empty() || host.size() > 253 || host.find_first_not_of(allowed) != std::string_view::npos ||
      host.front() == '-' || host.front() == '.') {
    return fail("guest name '" + std::string(host) + "' cannot be used in a playbook", std::string(host),
                "inventory names may hold letters, digits, '.', '_' and '-' and start with a letter or digit");
  }
  return {};
}

Status validate_become(const Become& become) {
  auto plain = [](std::string_view v, std::string_view extra) {
    return v.find_first_not_of(std::string("abcdefghijklmnopqrstuvwxyz0123456789_").append(extra)) ==
               std::string_view::npos &&
           v.front() != '-' && v.front() != '.';
  };
  if (!become.user.empty() && (become.user.size() > 32 || !plain(become.user, "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-"))) {
    return fail("become user '" + become.user + "' is not a user name", {},
                "a user name holds letters, digits, '_', '.' and '-' and starts with a letter, digit or '_'");
  }
  if (!become.method.empty() && !plain(become.method, ".")) {
    return fail("become method '" + become.method + "' is not the name of a become plugin", {},
                "use sudo, su, doas or another plugin's name (ansible-doc -t become -l)");
  }
  return {};
}

namespace {

// What a guest may send back per task: stdout (a facts report of a few hundred mounts is a few
// MB) and stderr (one line of why, or a tool's complaint). A task's whole output sits in
// ansible-playbook's memory, once per fork, before pathwarden reads it: a guest that prints
// more (a user's ten thousand FUSE mounts in /proc/mounts) is cut there, its script ends on
// SIGPIPE, and the report is refused as incomplete, never read in part.
constexpr std::size_t kMaxStdout = std::size_t{16} << 20;
constexpr std::size_t kMaxStderr = std::size_t{64} << 10;

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto space = text.find(' ', at);
    out.push_back(text.substr(at, space == std::string::npos ? std::string::npos : space - at));
    if (space == std::string::npos) break;
    at = space + 1;
  }
  return out;
}

// What /bin/sh runs: the script from the environment (PW_SCRIPT, base64 of "set -- ARGS;" and
// the script), its output through the caps above, and the script's own exit status (kept
// through fd 4, as a pipeline's status would be head's).
std::string runner_text() {
  return "pw=$PW_SCRIPT; unset PW_SCRIPT; { pw_rc=$( { { { (eval \"$(printf %s \"$pw\" | base64 -d)\"); "
         "printf %s \"$?\" >&4; } 2>&1 1>&5 | head -c " +
         std::to_string(kMaxStderr) + " >&2; } 5>&1 | head -c " + std::to_string(kMaxStdout) +
         " >&3; } 4>&1 ); } 3>&1; exit \"${pw_rc:-1}\"";
}

// A phase's one task: a constant POSIX sh script run by /bin/sh (whatever the login shell),
// as a `raw` task: no module, so no AnsiballZ payload built on the controller and no Python
// started in the guest, and nothing on ssh's stdin (a refused login keeps ssh's own message).
// `changes`: whether the script changes the guest (Ansible's recap counts it "changed").
//
// Values never reach a shell's parser. The SSH user's login shell (sh, bash, zsh, fish, tcsh:
// each quotes differently; fish reads `\'` inside single quotes as a quote, so Ansible's
// POSIX `quote` filter was no protection there) parses only constant words and one base64
// string. That string is `set -- ARGS;` followed by the script, built by Ansible from the vars
// file (every value unsafe: never templated) with the `quote` filter, which is exact for the
// one shell that reads it: /bin/sh, after base64 -d. `fixed` (validated values of ours, such as
// the fstab's path) are put in front of the host's by the script text itself. No file content
// is among the values (guest/fstab_edit.hpp), so `ps` on either side shows none.
//
// The guest's own `timeout` ends the script (and every process it started) at the settings'
// guest_timeout, so that the guest reports its own end (exit 124) and nothing is left running;
// Ansible's task timeout, a little later, is for a guest that no longer answers at all. Either
// is that guest's failure alone: the others' results stand.
//
// LC_ALL=C: the tools' messages the controller reads (dd's "File exists", ethtool's, mount's)
// are C's whatever locale the guest has or ssh passed on (Debian's sshd accepts LANG, LC_*).
// `prefix`: a Jinja expression whose text goes before the script (shell assignments Ansible
// decides per host), or empty.
YamlMap script_task(const char* name, std::string_view script, const std::vector<std::string>& fixed,
                    std::string_view host_args, const char* register_as, const PlaybookOptions& options,
                    Privilege privilege, bool changes = false, std::string_view prefix = {}) {
  const auto limit = std::max<long long>(1, options.guest_timeout.count());
  std::string args = host_args.empty() ? std::string("''")
                                       : "('set -- ' ~ (pathwarden_host." + std::string(host_args) +
                                             " | map('quote') | join(' ')) ~ ';')";
  if (!prefix.empty()) args = "(" + std::string(prefix) + ")\n   ~ " + args;
  // Over lines for ansible-lint's 160 columns: a newline inside the Jinja expression is nothing,
  // and between raw blocks `{{- ' ' }}` puts back the one space the line broke at (also inside
  // the quoted runner: it stays one word).
  std::string command = "env LC_ALL=C PW_SCRIPT={{ (" + args +
                        "\n   ~ pathwarden_script) | b64encode }} timeout -k 5 " + std::to_string(limit) +
                        " /bin/sh -c";
  std::string line;
  for (const auto& word : split_words(guest::shell_quote(runner_text()) + " sh")) {
    if (!line.empty() && line.size() + word.size() > 120) {
      command += "\n{{- ' ' }}{% raw %}" + line + "{% endraw %}";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  command += "\n{{- ' ' }}{% raw %}" + line + "{% endraw %}";
  std::string text;
  if (!fixed.empty()) {
    text = "set --";
    for (const auto& a : fixed) text += " " + guest::shell_quote(a);
    text += " \"$@\"\n";
  }
  text += script;
  YamlMap t{{"name", name},
            {"ansible.builtin.raw", YamlLiteral{std::move(command)}},
            {"changed_when", changes},
            {"register", register_as},
            // No tty: stdout and stderr apart, lines without the terminal's \r (ssh's -tt is
            // Ansible's default for a raw command).
            {"vars", YamlMap{{"ansible_ssh_use_tty", false},
                             {"pathwarden_script", YamlLiteral{"{% raw %}" + text + "{% endraw %}"}}}}};
  add_become(t, privilege, options);
  t.emplace_back("timeout", limit + kAnsibleGrace);
  return t;
}

}  // namespace

Result<Playbook> facts_playbook(std::span<const std::string> hosts, const PlaybookOptions& options,
                                const guest::FactsRequests& wanted) {
  if (auto s = validate_fstab_path(options.fstab_path); !s) return std::unexpected(s.error());
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& h : hosts) {
    if (auto s = validate_host_name(h); !s) return std::unexpected(s.error());
    if (seen.insert(h).second) names.push_back(h);
  }
  if (names.empty()) return fail("facts playbook without any guest", {}, "nothing to gather");
  // One task per guest (tests/bench/profiles: every task costs each guest a worker fork and an
  // SSH exchange on the controller whatever it does): the floor for the phase every scheduled
  // run pays on every guest. With a pipelined module instead of raw, a refused login can come
  // back as Ansible's "Data could not be sent ... Broken pipe" without ssh's own message
  // (ansible-core 2.14, plugins/connection/ssh.py _send_initial_data).
  // Names (a NAS given by host name) are resolved by the guest, as mount.nfs there will: through
  // its own resolver (getent ahosts: getaddrinfo, nsswitch, /etc/hosts), never the controller's.
  json::object per_host;
  bool resolving = false, docker = false;
  for (const auto& h : names) {
    std::vector<std::string> lookups;
    bool docker_volumes = false;
    if (auto it = wanted.find(h); it != wanted.end()) {
      auto args = guest::facts_arguments(it->second.names, it->second.path_mtu);
      if (!args) return fail(args.error().what, h);
      lookups = std::move(*args);
      docker_volumes = it->second.docker_volumes;
    }
    resolving = resolving || !lookups.empty();
    docker = docker || docker_volumes;
    per_host[h] = json::object{{"names", unsafe_list(lookups)}, {"docker", docker_volumes}};
  }
  // The facts phase is one task: the report script, the fstab's path its first argument and the
  // guest's NAS names after it.
  // Becoming root with sudo: the script checks that sudo will not ask, and Ansible tells it
  // whether the inventory gives a password (guest/sudo_check.hpp). Two fixed words, no host data.
  const bool sudo = options.become && (options.become->method.empty() || options.become->method == "sudo");
  const std::string_view sudo_check =
      sudo ? "((ansible_become_password is defined) or (ansible_become_pass is defined) or (ansible_sudo_pass is "
             "defined)) | ternary('PW_SUDO_CHECK=given;', 'PW_SUDO_CHECK=ask;')"
           : "";
  YamlList tasks{script_task(task::report, guest::guest_report_script(), {options.fstab_path}, resolving ? "names" : "",
                             "pathwarden_report", options, Privilege::ssh_user, false, sudo_check)};
  if (!resolving && !docker) {
    return finish("facts", names,
                  play("Gather guest facts for pathwarden", names, "", std::move(tasks), options, Privilege::ssh_user),
                  "");
  }
  // Docker's socket is root's (or the docker group's): become, as for the fstab write. Docker
  // not answering is the policy's "could not observe", not a failed guest.
  if (docker) {
    if (options.become) {
      if (auto st = validate_become(*options.become); !st) return std::unexpected(st.error());
    }
    // raw, like the report: no Python started in the guest (under emulation a module run costs
    // seconds). Its exit status says what happened, so it never fails the host.
    auto t = script_task(task::docker_volumes, guest::docker_volumes_script(), {}, "", "pathwarden_docker", options,
                         Privilege::root);
    t.emplace_back("when", "pathwarden_host.docker");
    t.emplace_back("failed_when", false);
    tasks.emplace_back(std::move(t));
  }
  return finish("facts", names,
                play("Gather guest facts for pathwarden", names, "facts.vars.json", std::move(tasks), options,
                     Privilege::ssh_user),
                vars_document(std::move(per_host)));
}

Result<Playbook> apply_playbook(std::span<const FstabChange> changes, const PlaybookOptions& options) {
  if (options.become) {
    if (auto s = validate_become(*options.become); !s) return std::unexpected(s.error());
  }
  if (auto s = validate_fstab_path(options.fstab_path); !s) return std::unexpected(s.error());
  auto hosts = hosts_of(changes, "apply");
  if (!hosts) return std::unexpected(hosts.error());
  json::object per_host;
  for (const auto& c : changes) {
    if (auto s = require_sha256(c.observed_sha256, "observed fstab hash", c.host); !s)
      return std::unexpected(s.error());
    if (guest::sha256_hex(c.observed_content) != c.observed_sha256) {
      return fail("the observed fstab's bytes do not have the observed hash", c.host,
                  "the change must carry the fstab exactly as observed (the guest gets an edit of it)");
    }
    if (auto s = require_absolute(c.backup_path, "backup path", c.host); !s) return std::unexpected(s.error());
    if (auto s = validate_activations(c.activations, c.host); !s) return std::unexpected(s.error());
    auto slash = c.backup_path.find_last_of('/');
    if (slash == 0 || slash + 1 == c.backup_path.size()) {
      return fail("backup path '" + c.backup_path + "' must name a file inside a directory", c.host);
    }
    auto argv = guest::apply_script_argv(c, guest::sha256_hex(c.new_content));
    if (!argv) return std::unexpected(argv.error());
    if (auto s = fits_command(*argv, c.host); !s) return std::unexpected(s.error());
    per_host[c.host] = json::object{{"apply_args", unsafe_list(*argv)}};
  }
  // One task per guest (the play as root): the apply script (guest/change_script.hpp) refuses when the
  // fstab moved since it was observed, keeps a backup, writes the new file atomically, checks
  // its hash, and re-makes the mounts; the stage it stopped in says what a failure touched.
  // The retention of the guest's backups, as two numbers ahead of the script (no host data).
  const std::string script = "pw_keep_backups=" + std::to_string(std::max(1, options.keep_backups)) +
                             " pw_backup_days=" + std::to_string(std::max(1, options.backup_days)) + "\n" +
                             std::string(guest::apply_script());
  YamlList tasks{script_task(task::apply, script, {options.fstab_path}, "apply_args", "pathwarden_apply", options,
                             Privilege::ssh_user, true)};
  return finish(
      "apply", *hosts,
      play("Apply fstab changes for pathwarden", *hosts, "apply.vars.json", std::move(tasks), options, Privilege::root),
      vars_document(std::move(per_host)));
}

Result<Playbook> rollback_playbook(std::span<const FstabRestore> restores, const PlaybookOptions& options) {
  if (options.become) {
    if (auto s = validate_become(*options.become); !s) return std::unexpected(s.error());
  }
  if (auto s = validate_fstab_path(options.fstab_path); !s) return std::unexpected(s.error());
  auto hosts = hosts_of(restores, "rollback");
  if (!hosts) return std::unexpected(hosts.error());
  json::object per_host;
  for (const auto& r : restores) {
    if (auto s = require_sha256(r.backup_sha256, "backup hash", r.host); !s) return std::unexpected(s.error());
    if (auto s = require_sha256(r.written_sha256, "written fstab hash", r.host); !s) return std::unexpected(s.error());
    if (auto s = require_absolute(r.backup_path, "backup path", r.host); !s) return std::unexpected(s.error());
    if (auto s = validate_activations(r.activations, r.host); !s) return std::unexpected(s.error());
    auto argv = guest::rollback_script_argv(r);
    if (!argv) return std::unexpected(argv.error());
    if (auto s = fits_command(*argv, r.host); !s) return std::unexpected(s.error());
    per_host[r.host] = json::object{{"rollback_args", unsafe_list(*argv)}};
  }
  // One task per guest (the play as root): the rollback script puts the backup back only over what apply
  // wrote (never over someone else's edit), then re-makes the mounts.
  YamlList tasks{script_task(task::rollback, guest::rollback_script(), {options.fstab_path}, "rollback_args",
                             "pathwarden_rollback", options, Privilege::ssh_user, true)};
  return finish("rollback", *hosts,
                play("Roll back fstab changes for pathwarden", *hosts, "rollback.vars.json", std::move(tasks), options,
                     Privilege::root),
                vars_document(std::move(per_host)));
}

// The probe play. Long because its per-host values (probe, commit cycles, refusal of links and
// devices, who reads) are validated and written here, next to the task that uses them.
Result<Playbook> probe_playbook(std::span<const ProbeRequest> probes, const PlaybookOptions& options) {
  if (options.become) {
    if (auto s = validate_become(*options.become); !s) return std::unexpected(s.error());
  }
  auto hosts = hosts_of(probes, "probe");
  if (!hosts) return std::unexpected(hosts.error());
  json::object per_host;
  for (const auto& p : probes) {
    if (auto s = require_absolute(p.path, "probe file", p.host); !s) return std::unexpected(s.error());
    if (p.bytes == 0) return fail("probe of 0 bytes", p.host, "give probe_bytes > 0");
    if (p.block_size == 0 || p.block_size % 4096 != 0) {
      return fail("probe block size must be a positive multiple of 4096 (O_DIRECT alignment)", p.host);
    }
    auto count = std::to_string((p.bytes + p.block_size - 1) / p.block_size);
    auto bs = "bs=" + std::to_string(p.block_size);
    // nofollow: dd opens no symbolic link; nonblock: a FIFO swapped in after the script's check
    // gives dd an empty read instead of an open that blocks until the task's limit.
    std::vector<std::string> argv =
        p.direction == ProbeDirection::read
            ? std::vector<std::string>{"dd", "if=" + p.path,   "of=/dev/null",
                                       bs,   "count=" + count, "iflag=direct,nofollow,nonblock"}
            // conv=excl: a write probe makes a new file and never overwrites one that is there
            // (dd refuses: "File exists"), so removing it afterwards removes only its own bytes;
            // O_CREAT|O_EXCL never follows a link either.
            : std::vector<std::string>{"dd",
                                       "if=/dev/zero",
                                       "of=" + p.path,
                                       bs,
                                       "count=" + count,
                                       "oflag=direct,nofollow",
                                       "conv=fsync,excl"};
    guest::ProbeScriptArgs args;
    args.baseline_seconds = static_cast<double>(p.baseline.count()) / 1000.0;
    if (p.direction == ProbeDirection::write) args.remove_after = p.path;
    if (p.commit_cycles > 0) {
      if (auto s = require_absolute(p.commit_path, "commit file", p.host); !s) return std::unexpected(s.error());
      args.commit_cycles = p.commit_cycles;
      args.commit_path = p.commit_path;
    }
    args.direction = p.direction;
    args.file = p.path;
    if (!p.mount_point.empty() && p.mount_point != "/" && p.path.starts_with(p.mount_point + "/"))
      args.mount_point = p.mount_point;
    args.dd_argv = std::move(argv);
    auto script_args = guest::probe_script_argv(args);
    if (auto s = fits_command(script_args, p.host); !s) return std::unexpected(s.error());
    // Least privilege: a read probe as the SSH user (the probe file is world-readable), root only
    // where the policy asks; a write probe as root (it makes and removes a file on the share).
    const bool root = p.direction == ProbeDirection::write || p.as_root;
    per_host[p.host] = json::object{{"probe_args", unsafe_list(script_args)}, {"probe_become", root}};
  }
  // The probe script checks the file, reads the counters, moves the bytes and reads them again
  // (plus the baseline before and the commit cycles after, when asked). Nothing runs in the
  // counter window but dd. With become, the task becomes root per host as probe_become says.
  // Then, in the same run, the facts report (as the SSH user, like the facts phase): the NFS
  // evidence right after the probe. A host whose probe task failed runs no further task. One
  // ansible-playbook run instead of two: a run's start costs the controller about a CPU-second
  // whatever it does, the second task only an SSH exchange.
  auto probe_task =
      script_task(task::probe, guest::probe_script(), {}, "probe_args", "pathwarden_probe", options, Privilege::root);
  for (auto& [key, value] : probe_task) {
    if (key == "become") value = Yaml("{{ pathwarden_host.probe_become }}");
  }
  YamlList tasks{std::move(probe_task), script_task(task::report, guest::guest_report_script(), {options.fstab_path},
                                                    "", "pathwarden_report", options, Privilege::ssh_user)};
  return finish("probe", *hosts,
                play("Probe storage paths for pathwarden", *hosts, "probe.vars.json", std::move(tasks), options,
                     Privilege::ssh_user),
                vars_document(std::move(per_host)));
}

Result<Playbook> channels_playbook(std::span<const ChannelsRequest> requests, const PlaybookOptions& options) {
  if (options.become) {
    if (auto s = validate_become(*options.become); !s) return std::unexpected(s.error());
  }
  auto hosts = hosts_of(requests, "channels");
  if (!hosts) return std::unexpected(hosts.error());
  json::object per_host;
  for (const auto& r : requests) {
    if (r.interface.empty() || r.interface.size() > 15 || r.interface.find_first_of("/: \t\n") != std::string::npos) {
      return fail("'" + r.interface + "' is not a network interface name", r.host,
                  "use the name the guest's facts report for the NIC's MAC address");
    }
    if (r.combined < 1 || r.combined > 1024) {
      return fail("combined queue count " + std::to_string(r.combined) + " is out of range", r.host, "use 1..1024");
    }
    per_host[r.host] = json::object{
        {"channels_args", unsafe_list({r.interface, std::to_string(r.combined), r.restore ? "restore" : "set"})}};
  }
  // One raw task (the play as root): ethtool with the interface and count as its arguments.
  YamlList tasks{script_task(task::set_channels, guest::set_channels_script(), {}, "channels_args",
                             "pathwarden_channels", options, Privilege::ssh_user, true)};
  return finish("channels", *hosts,
                play("Set NIC queue counts for pathwarden", *hosts, "channels.vars.json", std::move(tasks), options,
                     Privilege::root),
                vars_document(std::move(per_host)));
}

Result<Playbook> transport_playbook(std::span<const guest::TransportMove> moves, const PlaybookOptions& options) {
  if (options.become) {
    if (auto s = validate_become(*options.become); !s) return std::unexpected(s.error());
  }
  auto hosts = hosts_of(moves, "transport");
  if (!hosts) return std::unexpected(hosts.error());
  json::object per_host;
  for (const auto& m : moves) {
    auto argv = guest::transport_move_argv(m);
    if (!argv) return std::unexpected(argv.error());
    per_host[m.host] = json::object{{"transport_args", unsafe_list(*argv)}};
  }
  // One raw task (the play as root: sysfs writes): the script with the mount and the addresses
  // as its arguments, never in its text.
  YamlList tasks{script_task(task::move_transport, guest::transport_move_script(), {}, "transport_args",
                             "pathwarden_transport", options, Privilege::ssh_user, true)};
  return finish("transport", *hosts,
                play("Move NFS transports for pathwarden", *hosts, "transport.vars.json", std::move(tasks), options,
                     Privilege::root),
                vars_document(std::move(per_host)));
}

Status write_playbooks(std::span<const Playbook> playbooks, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  // Playbooks carry the guests' fstab contents: private like the state directory they live in
  // (directories 0700, files 0600), whatever the umask.
  std::error_code ec;
  std::vector<fs::path> made;
  for (auto p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) made.push_back(p);
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create directory: " + ec.message(), dir.string(), "check the path and permissions");
  for (const auto& p : made) fs::permissions(p, fs::perms::owner_all, fs::perm_options::replace, ec);
  auto write = [](const fs::path& path, const std::string& text) -> Status {
    return files::write_atomically(path, text, files::Visibility::owner_only);
  };
  for (const auto& p : playbooks) {
    if (auto s = write(dir / p.yaml_file(), p.yaml); !s) return s;
    if (!p.vars_json.empty()) {
      if (auto s = write(dir / p.vars_file(), p.vars_json); !s) return s;
    }
  }
  return {};
}

}  // namespace pw::ansible
