// SPDX-License-Identifier: GPL-3.0-or-later
// pvesim: a Proxmox VE API emulator for tests. See README.md for options, the admin API, the
// state format and the hook contract.
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "certificate.hpp"
#include "server.hpp"
#include "sim_state.hpp"
#include "simulator.hpp"
#include "tap_counters.hpp"

namespace {

namespace bj = boost::json;
using namespace pvesim;

constexpr const char* kUsage = R"(Usage: pvesim [OPTIONS]
A Proxmox VE API emulator on loopback (HTTPS, self-signed certificate made at start).

Listening:
  --listen ADDR            loopback address to listen on (default 127.0.0.1)
  --port N                 port, 0 = pick a free one (default 0)
  --ready-file PATH        once listening, write {"url","port","fingerprint","ca_file","pid"} here
  --cert-dir DIR           where to write the certificate PEM (default: the ready file's directory)
  --threads N              I/O threads (default 2); --workers N request handlers (default 8)
State:
  --state FILE             load guests and nodes from a JSON state file
  --dump-state FILE        write the state as JSON on exit
  --vms N                  generate a fleet of N guests; --nodes N (default 3), --seed N (default 1)
  --vm-hook VMID=CMD       run CMD on start/shutdown/stop/hotplug-nic of that VM (repeatable)
  --lock VMID=LOCK         put a lock (backup, migrate, ...) on a VM's config (repeatable)
  --sdn-vnet VNET=ZONE     an SDN VNet and its zone (repeatable); other bridges are in localnetwork
  --node-net-dev NODE=PATH the node's taps are real: read their counters from PATH on every
                           request, a /proc/net/dev file (/proc/PID/net/dev) or a network
                           namespace (/run/netns/NAME); other nodes' taps are simulated
Access:
  --token USER@REALM!NAME=SECRET[:PRIV,...]   an API token (repeatable); PRIV,... is granted on
                           "/", propagated (default: all; "none": nothing, give --acl entries)
  --user NAME@REALM=PASSWORD[:PRIV,...]       a user for tickets (repeatable), the same way
  --acl ID:PATH:PRIV,...[:0]  one more ACL entry for that token or user (repeatable): PRIV,... on
                           PATH, propagated unless :0 (as `pveum acl modify PATH --propagate 0`)
Faults (also at run time: PUT /pvesim/faults):
  --latency-ms N           delay every API answer
  --error-rate P           answer this share (0..1) of API requests with --error-status (default 503)
  --fail-next N            answer the next N API requests with --error-status
  --drop-rate P, --drop-next N   close the connection instead of answering
  --concurrent-edit VMID[:READS] after READS more reads of its config (default 1), edit it
  --fail-task TYPE[:VMID][=MESSAGE]  the next task of TYPE (qmstart, qmshutdown, qmstop, qmreboot,
                           qmconfig) fails with MESSAGE
Timing:
  --task-duration-ms N     time each task takes (default 100)
  --boot-delay-ms N        after a reboot task ends, until the VM runs again (default 200)
  --pvestatd-interval-ms N  /cluster/resources shows guest status as sampled every N ms, "unknown"
                           before a guest's first sample, as pvestatd's broadcast (default 0: live;
                           POST /pvesim/pvestatd samples at once)
  --auth-failure-delay-ms N   delay of 401 answers (default 3000, like pveproxy)
  --hook-timeout-s N       kill a hook after this long (default 600)
  --log-requests           log every request to stderr
Guest agent (README.md "Guest agent"):
  --qga-dir DIR            a VM without a recorded agent has a real QEMU guest agent on the UNIX
                           socket DIR/<vmid>.qga (as /var/run/qemu-server/<vmid>.qga)
  --agent-ping-timeout-ms N     budget of the guest-ping before each call (default 3000, qemu-server's)
  --agent-command-timeout-ms N  budget of every other guest command (default 5000, qemu-server's)
  --pvedaemon-workers N    agent calls handled at once per node, the others wait (default 3)
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "pvesim: " << message << " (see pvesim --help)\n";
  std::exit(2);
}

int to_int(const std::string& option, const std::string& value) {
  try {
    std::size_t used = 0;
    int n = std::stoi(value, &used);
    if (used != value.size()) throw std::invalid_argument(value);
    return n;
  } catch (const std::exception&) {
    usage_error(option + ": '" + value + "' is not a number");
  }
}

double to_double(const std::string& option, const std::string& value) {
  try {
    double d = std::stod(value);
    if (d < 0 || d > 1) throw std::out_of_range(value);
    return d;
  } catch (const std::exception&) {
    usage_error(option + ": '" + value + "' is not a share from 0 to 1");
  }
}

struct Credential {
  std::string id, secret;
  Acl acl;
};

Credential parse_credential(const std::string& option, const std::string& value, const std::regex& id_re,
                            const std::string& example) {
  const std::size_t eq = value.find('=');
  if (eq == std::string::npos) usage_error(option + " wants " + example);
  Credential c;
  c.id = value.substr(0, eq);
  if (!std::regex_match(c.id, id_re)) usage_error(option + ": '" + c.id + "' is not of the form " + example);
  std::string rest = value.substr(eq + 1);
  std::string privs;
  if (auto colon = rest.find(':'); colon != std::string::npos) {
    privs = rest.substr(colon + 1);
    rest.resize(colon);
  }
  if (rest.empty()) usage_error(option + ": the secret is empty");
  c.secret = rest;
  std::string error;
  auto p = parse_privileges(privs, error);
  if (!p) usage_error(option + ": " + error);
  if (!p->empty()) c.acl.push_back(AclEntry{"/", *p, true});
  return c;
}

std::pair<int, std::string> vmid_assignment(const std::string& option, const std::string& value) {
  const std::size_t eq = value.find('=');
  if (eq == std::string::npos || eq + 1 == value.size()) usage_error(option + " wants VMID=VALUE");
  return {to_int(option, value.substr(0, eq)), value.substr(eq + 1)};
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) usage_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  ServerOptions server_options;
  SimOptions sim_options;
  Faults faults;
  std::string ready_file, cert_dir, state_file, dump_file;
  int vms = 0, nodes = 3;
  std::uint64_t seed = 1;
  std::vector<Credential> tokens, users;
  std::vector<std::pair<std::string, AclEntry>> acls;
  std::vector<std::pair<int, std::string>> hooks, locks;
  std::map<std::string, std::string> sdn_vnets;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string opt = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = opt.find('='); opt.starts_with("--") && eq != std::string::npos) {
      inline_value = opt.substr(eq + 1);
      opt.resize(eq);
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) usage_error(opt + " needs a value");
      return args[++i];
    };
    static const std::regex token_re(R"(^[^@!=:\s]+@[^@!=:\s]+![A-Za-z][A-Za-z0-9._-]*$)");
    static const std::regex user_re(R"(^[^@!=:\s]+@[^@!=:\s]+$)");
    if (opt == "--help" || opt == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (opt == "--listen") {
      server_options.address = value();
    } else if (opt == "--port") {
      server_options.port = static_cast<unsigned short>(to_int(opt, value()));
    } else if (opt == "--ready-file") {
      ready_file = value();
    } else if (opt == "--cert-dir") {
      cert_dir = value();
    } else if (opt == "--threads") {
      server_options.io_threads = to_int(opt, value());
    } else if (opt == "--workers") {
      server_options.workers = to_int(opt, value());
    } else if (opt == "--state") {
      state_file = value();
    } else if (opt == "--dump-state") {
      dump_file = value();
    } else if (opt == "--vms") {
      vms = to_int(opt, value());
    } else if (opt == "--nodes") {
      nodes = to_int(opt, value());
    } else if (opt == "--seed") {
      seed = static_cast<std::uint64_t>(to_int(opt, value()));
    } else if (opt == "--token") {
      tokens.push_back(parse_credential(opt, value(), token_re, "USER@REALM!NAME=SECRET[:PRIV,...]"));
    } else if (opt == "--user") {
      users.push_back(parse_credential(opt, value(), user_re, "NAME@REALM=PASSWORD[:PRIV,...]"));
    } else if (opt == "--acl") {
      const std::string v = value();
      const std::size_t colon = v.find(':');
      AclEntry entry;
      if (colon == std::string::npos) usage_error("--acl wants ID:PATH:PRIV,...[:0]");
      if (auto error = parse_acl_entry(v.substr(colon + 1), entry); !error.empty())
        usage_error("--acl " + v + ": " + error);
      acls.emplace_back(v.substr(0, colon), std::move(entry));
    } else if (opt == "--sdn-vnet") {
      const std::string v = value();
      const std::size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) usage_error("--sdn-vnet wants VNET=ZONE");
      sdn_vnets[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (opt == "--vm-hook") {
      hooks.push_back(vmid_assignment(opt, value()));
    } else if (opt == "--lock") {
      locks.push_back(vmid_assignment(opt, value()));
    } else if (opt == "--node-net-dev") {
      const std::string v = value();
      const std::size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) usage_error("--node-net-dev wants NODE=PATH");
      if (!sim_options.node_net_dev.emplace(v.substr(0, eq), v.substr(eq + 1)).second) {
        usage_error("--node-net-dev: node " + v.substr(0, eq) + " given twice");
      }
    } else if (opt == "--latency-ms") {
      faults.latency_ms = to_int(opt, value());
    } else if (opt == "--error-rate") {
      faults.error_rate = to_double(opt, value());
    } else if (opt == "--error-status") {
      faults.error_status = to_int(opt, value());
      if (faults.error_status < 500 || faults.error_status > 599) usage_error("--error-status must be 5xx");
    } else if (opt == "--fail-next") {
      faults.fail_next = to_int(opt, value());
    } else if (opt == "--drop-rate") {
      faults.drop_rate = to_double(opt, value());
    } else if (opt == "--drop-next") {
      faults.drop_next = to_int(opt, value());
    } else if (opt == "--concurrent-edit") {
      const std::string v = value();
      Faults::ConcurrentEdit e;
      const std::size_t colon = v.find(':');
      e.vmid = to_int(opt, v.substr(0, colon));
      if (colon != std::string::npos) e.after_reads = to_int(opt, v.substr(colon + 1));
      faults.concurrent_edits.push_back(e);
    } else if (opt == "--fail-task") {
      static const std::regex re(R"(^(qmstart|qmshutdown|qmstop|qmreboot|qmconfig)(?::(\d+))?(?:=(.*))?$)");
      const std::string v = value();
      std::smatch m;
      if (!std::regex_match(v, m, re))
        usage_error(
            "--fail-task wants TYPE[:VMID][=MESSAGE] with TYPE one of qmstart, qmshutdown, qmstop, qmreboot, qmconfig");
      Faults::TaskFailure f;
      f.type = m[1];
      f.vmid = m[2].matched ? std::stoi(m[2]) : 0;
      f.message = m[3].matched && m[3].length() > 0 ? std::string(m[3]) : "pvesim: injected failure of " + f.type;
      faults.task_failures.push_back(f);
    } else if (opt == "--task-duration-ms") {
      sim_options.task_duration_ms = to_int(opt, value());
    } else if (opt == "--boot-delay-ms") {
      sim_options.boot_delay_ms = to_int(opt, value());
    } else if (opt == "--pvestatd-interval-ms") {
      sim_options.pvestatd_interval_ms = to_int(opt, value());
    } else if (opt == "--auth-failure-delay-ms") {
      sim_options.auth_failure_delay_ms = to_int(opt, value());
    } else if (opt == "--hook-timeout-s") {
      sim_options.hook_timeout = std::chrono::seconds(to_int(opt, value()));
    } else if (opt == "--log-requests") {
      sim_options.log_requests = true;
    } else if (opt == "--qga-dir") {
      sim_options.qga_dir = value();
      if (!std::filesystem::is_directory(sim_options.qga_dir))
        usage_error("--qga-dir: no directory " + sim_options.qga_dir);
    } else if (opt == "--agent-ping-timeout-ms") {
      sim_options.agent_ping_timeout_ms = to_int(opt, value());
      if (sim_options.agent_ping_timeout_ms < 1) usage_error("--agent-ping-timeout-ms must be positive");
    } else if (opt == "--agent-command-timeout-ms") {
      sim_options.agent_command_timeout_ms = to_int(opt, value());
      if (sim_options.agent_command_timeout_ms < 1) usage_error("--agent-command-timeout-ms must be positive");
    } else if (opt == "--pvedaemon-workers") {
      sim_options.pvedaemon_workers = to_int(opt, value());
      if (sim_options.pvedaemon_workers < 1) usage_error("--pvedaemon-workers must be at least 1");
    } else {
      usage_error("unknown option '" + opt + "'");
    }
  }

  Cluster cluster;
  if (!state_file.empty()) {
    std::ifstream in(state_file);
    if (!in) usage_error("cannot read state file " + state_file);
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    auto json = bj::parse(ss.str(), ec);
    if (ec) usage_error(state_file + ": not JSON: " + ec.message());
    std::string error;
    if (!load_state(cluster, json, error)) usage_error(state_file + ": " + error);
  }
  if (vms > 0) generate_fleet(cluster, vms, nodes, seed);
  if (cluster.nodes.empty()) cluster.nodes.push_back("pve1");
  for (const auto& [vmid, cmd] : hooks) {
    Vm* vm = cluster.find(vmid);
    if (vm == nullptr) usage_error("--vm-hook: no guest " + std::to_string(vmid));
    vm->hook = cmd;
  }
  static const std::set<std::string> lock_values = {"backup",   "clone",           "create",     "migrate",  "rollback",
                                                    "snapshot", "snapshot-delete", "suspending", "suspended"};
  for (const auto& [vmid, lock] : locks) {
    Vm* vm = cluster.find(vmid);
    if (vm == nullptr) usage_error("--lock: no guest " + std::to_string(vmid));
    if (!lock_values.contains(lock)) usage_error("--lock: '" + lock + "' is not a Proxmox lock value");
    vm->conf["lock"] = lock;
  }
  for (const auto& [node, path] : sim_options.node_net_dev) {
    if (std::ranges::find(cluster.nodes, node) == cluster.nodes.end()) usage_error("--node-net-dev: no node " + node);
    // Unreadable now is a usage error; later (a namespace gone) it is what Proxmox shows: no taps.
    if (auto read = read_net_dev(path); !read.text) usage_error("--node-net-dev " + node + ": " + read.error);
  }
  for (const auto& [vnet, zone] : sdn_vnets) cluster.sdn_vnets[vnet] = zone;
  for (auto& [id, entry] : acls) {
    auto has = [&](const Credential& c) { return c.id == id; };
    auto t = std::ranges::find_if(tokens, has);
    auto u = std::ranges::find_if(users, has);
    if (t != tokens.end()) {
      t->acl.push_back(entry);
    } else if (u != users.end()) {
      u->acl.push_back(entry);
    } else {
      usage_error("--acl: no --token or --user '" + id + "' to give the entry to");
    }
  }
  if (tokens.empty() && users.empty()) std::cerr << "pvesim: warning: no --token or --user given; nobody can log in\n";

  try {
    const SelfSignedCertificate cert = make_self_signed_certificate();
    sim_options.fingerprint = cert.fingerprint;
    Simulator sim(std::move(cluster), sim_options, faults, seed);
    for (auto& t : tokens) sim.add_token(Token{{t.acl}, t.id, t.secret});
    for (auto& u : users) sim.add_user(User{{u.acl}, u.id, u.secret});
    Server server(server_options, cert.cert_pem, cert.key_pem, sim);
    const unsigned short port = server.port();

    if (cert_dir.empty()) {
      if (!ready_file.empty()) {
        cert_dir = std::filesystem::absolute(ready_file).parent_path().string();
      } else {
        const char* tmp = std::getenv("TMPDIR");
        cert_dir = tmp != nullptr ? tmp : "/tmp";
      }
    }
    const std::string ca_file =
        (std::filesystem::absolute(cert_dir) / ("pvesim-" + std::to_string(getpid()) + "-cert.pem")).string();
    write_file_atomically(ca_file, cert.cert_pem);
    const bool v6 = server_options.address.find(':') != std::string::npos;
    const std::string url =
        "https://" + (v6 ? "[" + server_options.address + "]" : server_options.address) + ":" + std::to_string(port);
    if (!ready_file.empty()) {
      bj::object ready{{"url", url},
                       {"port", port},
                       {"fingerprint", cert.fingerprint},
                       {"ca_file", ca_file},
                       {"pid", static_cast<int>(getpid())}};
      write_file_atomically(ready_file, bj::serialize(ready) + "\n");
    }
    std::cout << "pvesim listening on " << url << " fingerprint " << cert.fingerprint << std::endl;

    server.run();
    sim.stop_agent_calls();
    sim.wait_for_tasks();
    if (!dump_file.empty()) write_file_atomically(dump_file, bj::serialize(sim.state_json()) + "\n");
    std::error_code ec;
    std::filesystem::remove(ca_file, ec);
    if (!ready_file.empty()) std::filesystem::remove(ready_file, ec);
    std::cout << "pvesim stopped" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "pvesim: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
