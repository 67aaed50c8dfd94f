// SPDX-License-Identifier: GPL-3.0-or-later
// Benchmarks that need the engine or the Ansible runner from C++ (tests/bench/run drives them and
// prints the table). Each mode prints one JSON object on stdout.
//
//   pw_bench observe  --fleet DIR --url URL --fingerprint FP --token ID=SECRET [--repeat N] [--batch N]
//       Engine::observe_and_plan over the fleet's policies: the real proxmox::Client against pvesim,
//       the guests simulated in memory (answering at once, converged as the policies say).
//   pw_bench throughput --fleet DIR --url URL --fingerprint FP --token ID=SECRET --requests N --in-flight K
//       config reads (GET .../pending) as fast as pvesim answers them.
//   pw_bench guest-phases --lab NAME --work DIR [--forks N] [--one-by-one 0] [--share 0]
//       the generated playbooks (facts, apply, probe, rollback) through AnsiblePlaybookRunner against
//       light guests: one run for all guests, then (unless --one-by-one 0) one run per guest. Each
//       phase's controller CPU-seconds (the ansible-playbook runs and what they waited for:
//       getrusage(RUSAGE_CHILDREN) deltas) and the largest child's peak RSS come with its time.
//       SSH as the controller runs it (shared connections unless --share 0).
#include <sys/resource.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ansible/phase_results.hpp"
#include "ansible/playbooks.hpp"
#include "ansible/runner.hpp"
#include "guest/sha256.hpp"
#include "journal/clock.hpp"
#include "journal/guest_lock.hpp"
#include "journal/result_store.hpp"
#include "journal/storage.hpp"
#include "light_lab.hpp"
#include "plan/planner.hpp"
#include "policy/loader.hpp"
#include "proxmox/client.hpp"
#include "proxmox/net_device.hpp"
#include "reconcile/engine.hpp"
#include "simulated_cluster.hpp"
#include "timing/sleeper.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "pw_bench: " << what << "\n";
  std::exit(2);
}

struct Args {
  std::string mode;
  std::map<std::string, std::string> values;

  std::string get(const std::string& key) const {
    auto it = values.find(key);
    if (it == values.end()) die("--" + key + " is required");
    return it->second;
  }
  std::string get_or(const std::string& key, std::string fallback) const {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  long number(const std::string& key, long fallback) const {
    auto it = values.find(key);
    return it == values.end() ? fallback : std::stol(it->second);
  }
};

Args parse_args(int argc, char** argv) {
  if (argc < 2) die("usage: pw_bench observe|throughput|guest-phases --option value ...");
  Args a;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (!k.starts_with("--") || i + 1 >= argc) die("expected --option value, got " + k);
    a.values[k.substr(2)] = argv[++i];
  }
  return a;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) die("cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- the fleet (written by tests/pwtest/fleet.py): pvesim state + one policy per VM ----------

struct Fleet {
  std::vector<pw::policy::StoragePath> policies;
  std::map<int, std::string> net_of;  // vmid → the managed NIC's value in pvesim's state
  std::vector<pw::proxmox::VmRef> vms;
};

Fleet load_fleet(const fs::path& dir) {
  Fleet f;
  std::vector<fs::path> inputs{dir / "policies"};
  auto loaded = pw::policy::load_paths(inputs);
  if (!loaded.ok()) die(loaded.diagnostics.front().to_string());
  f.policies = std::move(loaded.paths);
  auto state = json::parse(read_file(dir / "state.json")).as_object();
  std::map<int, const json::object*> guests;
  for (const auto& g : state.at("guests").as_array()) guests[g.at("vmid").to_number<int>()] = &g.as_object();
  for (const auto& p : f.policies) {
    auto it = guests.find(p.guest.vmid);
    if (it == guests.end()) die("policy " + p.name + ": no VM " + std::to_string(p.guest.vmid) + " in state.json");
    f.net_of[p.guest.vmid] = std::string(it->second->at("config").at(p.nic.device).as_string());
    f.vms.push_back({p.guest.node, p.guest.vmid});
  }
  return f;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every guest exactly as its policy wants it: the entry (with pathwarden's comment) in the fstab,
// the NFS mount with those options, the NIC of the VM's netN with as many channels as queues.
void converge(pw::testing::SimulatedGuests& guests, const Fleet& f) {
  for (const auto& p : f.policies) {
    auto nic = pw::proxmox::NetDeviceSpec::parse(f.net_of.at(p.guest.vmid));
    if (!nic || !nic->mac()) die("VM " + std::to_string(p.guest.vmid) + ": no MAC on " + p.nic.device);
    auto& g = guests.guests[p.guest.host];
    const int queues = p.nic.queues.value_or(1);
    g.nics = {{"ens19", lower(*nic->mac()), queues, queues, 0, 0, 3}};
    g.routes = {{p.mount.server, "ens19"}};
    g.nas_addresses = {p.mount.server};
    auto fstab = pw::guest::FstabFile::parse(g.fstab.empty() ? "UUID=b1 / ext4 errors=remount-ro 0 1\n" : g.fstab);
    if (auto changed = fstab.set_entry(pw::plan::desired_fstab_entry(p), {p.name, p.mount.reason}); !changed) {
      die(changed.error().to_string());
    }
    g.fstab = fstab.print();
    std::vector<std::string> options;
    for (const auto& o : p.mount.options) options.push_back(o.to_string());
    guests.mount(g, p.mount.server + ":" + p.mount.export_path, p.mount.path, options);
  }
}

pw::proxmox::ClientOptions client_options(const Args& a) {
  pw::proxmox::ClientOptions o;
  o.url = a.get("url");
  o.fingerprint = a.get("fingerprint");
  const auto token = a.get("token");
  const auto eq = token.find('=');
  if (eq == std::string::npos) die("--token ID=SECRET");
  o.token_id = token.substr(0, eq);
  o.token_secret = pw::proxmox::Secret(token.substr(eq + 1));
  o.max_in_flight = static_cast<int>(a.number("in-flight", 16));
  return o;
}

std::unique_ptr<pw::proxmox::Client> connect(const Args& a) {
  auto c = pw::proxmox::Client::create(client_options(a));
  if (!c) die(c.error().to_string());
  return std::move(*c);
}

int run_observe(const Args& a) {
  const auto fleet = load_fleet(a.get("fleet"));
  pw::testing::SimulatedGuests guests;
  converge(guests, fleet);
  const long repeat = a.number("repeat", 3);
  json::array runs;
  for (long r = 0; r < repeat; ++r) {
    // A scheduled run is a new process: new connections (TLS handshakes) every time.
    auto client = connect(a);
    pw::journal::InMemoryJournalStore journals;
    pw::journal::InMemoryGuestLocks locks;
    pw::journal::InMemoryPolicyResultStore results;
    pw::journal::SystemClock clock;
    pw::timing::ManualSleeper sleeper;
    pw::reconcile::EngineOptions options;
    options.observe_batch = static_cast<std::size_t>(a.number("batch", 256));
    pw::reconcile::Engine engine({*client, guests, journals, locks, results, clock, sleeper, {}}, options);
    guests.runs = 0;
    const auto t0 = Clock::now();
    const auto plan = engine.observe_and_plan(fleet.policies);
    const double took = seconds_since(t0);
    std::map<std::string, int> states;
    std::string first_problem;
    for (const auto& p : plan.policies) {
      const char* s = p.state == pw::plan::PolicyState::converged ? "converged"
                      : p.state == pw::plan::PolicyState::changes ? "changes"
                                                                  : "precondition_failed";
      ++states[s];
      if (first_problem.empty() && p.state != pw::plan::PolicyState::converged) {
        first_problem =
            p.policy + ": " + (p.blockers.empty() ? (p.steps.empty() ? "" : p.steps[0].summary) : p.blockers[0]);
      }
    }
    json::object run{{"seconds", took}, {"policies", plan.policies.size()}, {"facts_runs", guests.runs}};
    for (const auto& [k, v] : states) run[k] = v;
    if (!first_problem.empty()) run["first_problem"] = first_problem;
    runs.push_back(std::move(run));
  }
  std::cout << json::serialize(json::object{{"mode", "observe"}, {"vms", fleet.vms.size()}, {"runs", runs}}) << "\n";
  return 0;
}

int run_throughput(const Args& a) {
  const auto fleet = load_fleet(a.get("fleet"));
  auto client = connect(a);
  const long total = a.number("requests", 20000);
  std::vector<pw::proxmox::VmRef> refs;
  refs.reserve(static_cast<std::size_t>(total));
  for (long i = 0; i < total; ++i) refs.push_back(fleet.vms[static_cast<std::size_t>(i) % fleet.vms.size()]);
  (void)client->read_pendings(std::span(refs).first(std::min<std::size_t>(refs.size(), 64)));  // connections up
  const auto t0 = Clock::now();
  auto results = client->read_pendings(refs);
  const double took = seconds_since(t0);
  long failed = 0;
  for (const auto& r : results) failed += r ? 0 : 1;
  std::cout << json::serialize(json::object{{"mode", "throughput"},
                                            {"requests", total},
                                            {"failed", failed},
                                            {"in_flight", a.number("in-flight", 16)},
                                            {"seconds", took},
                                            {"per_second", static_cast<double>(total) / took}})
            << "\n";
  return failed == 0 ? 0 : 1;
}

// ---- guest phases against light guests --------------------------------------------------------

pw::testing::LightLab light_lab(const std::string& name) {
  try {
    return pw::testing::LightLab::open(name);
  } catch (const std::exception& e) {
    die("light guests of lab " + name + " are not up: " + e.what());
  }
}

// One phase's playbook for some guests; `facts` (from the first facts run) gives the fstab hashes.
using PhaseBuilder = std::function<pw::Result<pw::ansible::Playbook>(const std::vector<std::string>& hosts)>;

double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

long children_max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_maxrss;
}

struct PhaseTiming {
  double together = 0;      // one run for every guest
  double together_cpu = 0;  // CPU-seconds of that run (ansible-playbook and its forks)
  double one_by_one = 0;    // one run per guest, in turn
  int runs_together = 0, runs_one_by_one = 0;
  int ok_together = 0, ok_one_by_one = 0;
};

int count_ok(const pw::ansible::PlaybookRun& r) {
  return static_cast<int>(r.succeeded().size());
}

int run_guest_phases(const Args& a) {
  const auto lab = light_lab(a.get("lab"));
  const fs::path work = a.get("work");
  std::vector<std::string> hosts;
  for (int i = 1; i <= lab.guests; ++i) hosts.push_back("guest" + std::to_string(i));
  // SSH as pathwarden's runtime sets it up; --share 0 turns connection sharing off, as
  // spec.ansible.share_connections: false does (the gain of sharing, issue 18).
  const bool share = a.number("share", 1) != 0;
  pw::ansible::AnsiblePlaybookRunner runner(lab.runner_options(work, share));
  const int forks = static_cast<int>(a.number("forks", 16));
  auto run = [&](const std::string& phase, pw::Result<pw::ansible::Playbook> book) {
    if (!book) die(phase + ": " + book.error().to_string());
    pw::ansible::RunRequest req{phase, std::move(*book), {lab.inventory}, forks, std::chrono::minutes(10)};
    auto r = runner.run(req);
    if (!r) die(phase + ": " + r.error().to_string());
    return *r;
  };

  // The observed fstab of every guest, for the apply/rollback compare-and-swap.
  auto facts_report = run("warmup", pw::ansible::facts_playbook(hosts));
  std::map<std::string, std::string> fstab_hash, fstab_content;
  for (auto& [h, f] : pw::ansible::guest_facts_from(facts_report)) {
    if (!f) die(h + ": " + f.error().to_string());
    fstab_hash[h] = f->fstab_sha256;
    fstab_content[h] = f->fstab_content;
  }
  auto new_fstab = [&](const std::string&) {
    return std::string("# bench\ntmpfs /mnt/pw-bench tmpfs size=1m,mode=0755 0 0\n");
  };
  auto change = [&](const std::string& h) {
    pw::guest::FstabChange c;
    c.host = h;
    c.observed_sha256 = fstab_hash.at(h);
    c.observed_content = fstab_content.at(h);
    c.new_content = new_fstab(h);
    c.backup_path = "/var/backups/pathwarden/fstab.bench." + h;
    c.activations = {{"/mnt/pw-bench", "tmpfs", "tmpfs", {"size=1m"}, true}};
    return c;
  };
  auto restore = [&](const std::string& h) {
    pw::guest::FstabRestore r;
    r.host = h;
    r.backup_path = "/var/backups/pathwarden/fstab.bench." + h;
    r.backup_sha256 = fstab_hash.at(h);
    r.written_sha256 = pw::guest::sha256_hex(new_fstab(h));
    r.activations = {{"/mnt/pw-bench", "tmpfs", "tmpfs", {}, false}};
    return r;
  };
  const std::string probe_file = a.get_or("probe-file", "/var/tmp/pw-bench-probe");
  const std::uint64_t probe_bytes = static_cast<std::uint64_t>(a.number("probe-bytes", 4 << 20));
  std::vector<std::pair<std::string, PhaseBuilder>> phases{
      {"facts", [](const std::vector<std::string>& h) { return pw::ansible::facts_playbook(h); }},
      {"apply",
       [&](const std::vector<std::string>& h) {
         std::vector<pw::guest::FstabChange> v;
         for (const auto& x : h) v.push_back(change(x));
         return pw::ansible::apply_playbook(v);
       }},
      {"probe",
       [&](const std::vector<std::string>& h) {
         std::vector<pw::guest::ProbeRequest> v;
         // With the engine's default baseline window, as a reconcile's probe phase runs it.
         for (const auto& x : h) {
           v.push_back({x, probe_file, probe_bytes, pw::verify::ProbeDirection::read, 1024 * 1024,
                        std::chrono::milliseconds(2000)});
         }
         return pw::ansible::probe_playbook(v);
       }},
      {"rollback",
       [&](const std::vector<std::string>& h) {
         std::vector<pw::guest::FstabRestore> v;
         for (const auto& x : h) v.push_back(restore(x));
         return pw::ansible::rollback_playbook(v);
       }},
  };
  json::array out;
  // Together first, then one by one; each pair leaves the guests as it found them (rollback).
  std::map<std::string, PhaseTiming> timing;
  const int passes = a.number("one-by-one", 1) != 0 ? 2 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& [phase, build] : phases) {
      auto& t = timing[phase];
      const auto t0 = Clock::now();
      if (pass == 0) {
        const double cpu0 = children_cpu_seconds();
        auto r = run(phase, build(hosts));
        ++t.runs_together;
        t.ok_together = count_ok(r);
        t.together = seconds_since(t0);
        t.together_cpu = children_cpu_seconds() - cpu0;
      } else {
        for (const auto& h : hosts) {
          auto r = run(phase + "-" + h, build({h}));
          ++t.runs_one_by_one;
          t.ok_one_by_one += count_ok(r);
        }
        t.one_by_one = seconds_since(t0);
      }
    }
  }
  for (const auto& [phase, _] : phases) {
    const auto& t = timing[phase];
    out.push_back(json::object{{"phase", phase},
                               {"together_seconds", t.together},
                               {"together_runs", t.runs_together},
                               {"together_cpu_seconds", t.together_cpu},
                               {"together_ok", t.ok_together},
                               {"one_by_one_seconds", t.one_by_one},
                               {"one_by_one_runs", t.runs_one_by_one},
                               {"one_by_one_ok", t.ok_one_by_one}});
  }
  std::cout << json::serialize(json::object{{"mode", "guest-phases"},
                                            {"guests", lab.guests},
                                            {"forks", forks},
                                            {"share", share},
                                            {"children_max_rss_kib", children_max_rss_kib()},
                                            {"phases", out}})
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto a = parse_args(argc, argv);
  if (a.mode == "observe") return run_observe(a);
  if (a.mode == "throughput") return run_throughput(a);
  if (a.mode == "guest-phases") return run_guest_phases(a);
  die("unknown mode " + a.mode + " (observe, throughput, guest-phases)");
}
