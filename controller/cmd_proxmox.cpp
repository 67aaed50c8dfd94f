// SPDX-License-Identifier: GPL-3.0-or-later
// `pathwarden proxmox nics`: the NICs and virtio queues of every QEMU guest of a cluster, as an
// operator would check them by hand -- what is in effect, and what waits for a restart.
#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "command_errors.hpp"
#include "commands.hpp"
#include "diagnostics/suggest.hpp"
#include "proxmox/client.hpp"
#include "settings/proxmox_options.hpp"
#include "settings_file.hpp"

namespace pw::cli {

namespace {

// What `proxmox` does: its first argument is one of these.
constexpr std::array<std::string_view, 1> kActions = {"nics"};

using namespace pw::proxmox;

Result<Secret> secret_from(const std::optional<std::string>& file, const std::optional<std::string>& env) {
  if (file) return load_secret_file(*file);
  if (env) return load_secret_env(*env);
  return Secret();
}

Result<ClientOptions> options_from_flags(const Args& args) {
  ClientOptions o;
  o.url = *args.value("url");
  o.token_id = args.value_or("token-id", "");
  o.user = args.value_or("user", "");
  if (!o.token_id.empty()) {
    auto s = secret_from(args.value("token-secret-file"), args.value("token-secret-env"));
    if (!s) return std::unexpected(s.error());
    if (s->empty()) {
      return fail("--token-id needs --token-secret-file or --token-secret-env", "pathwarden proxmox",
                  "secrets are never taken from the command line");
    }
    o.token_secret = std::move(*s);
  } else if (!o.user.empty()) {
    auto s = secret_from(args.value("password-file"), args.value("password-env"));
    if (!s) return std::unexpected(s.error());
    if (s->empty()) return fail("--user needs --password-file or --password-env", "pathwarden proxmox");
    o.password = std::move(*s);
  }
  o.ca_file = args.value_or("ca-file", "");
  o.fingerprint = args.value_or("fingerprint", "");
  o.insecure_skip_verify = args.flag("insecure");
  return o;
}

Result<ClientOptions> options_from_settings(const GlobalOptions& globals) {
  auto loaded = load_settings(globals);
  if (!loaded) {
    Error e = loaded.error();
    e.hint = "pass --url with --token-id and --token-secret-file, or set proxmox: in the controller settings";
    return std::unexpected(e);
  }
  return settings::proxmox_client_options(*loaded);
}

struct NicRow {
  GuestSummary guest;
  std::string key;
  std::string model, mac, bridge;
  std::optional<int> queues;
  std::string value;                   // in effect
  std::optional<std::string> pending;  // new value waiting for a restart
  bool pending_delete = false;
};

std::string pending_text(const NicRow& row) {
  if (row.pending_delete) return "removed at next restart";
  if (!row.pending) return "";
  auto now = NetDeviceSpec::parse(row.value);
  auto next = NetDeviceSpec::parse(*row.pending);
  if (now && next && now->model() == next->model() && now->mac() == next->mac()) {
    std::string diff;
    for (auto key : kNetOptionKeys) {
      auto a = now->get(key), b = next->get(key);
      if (a == b) continue;
      diff += (diff.empty() ? "" : ", ") + std::string(key) + " " + a.value_or("-") + " -> " + b.value_or("-");
    }
    if (!diff.empty()) return diff;
  }
  return *row.pending;
}

void print_table(const std::vector<NicRow>& rows) {
  const std::vector<std::string> head{"NODE",  "VMID", "NAME",   "STATUS", "NIC",
                                      "MODEL", "MAC",  "BRIDGE", "QUEUES", "PENDING"};
  std::vector<std::vector<std::string>> table{head};
  for (const auto& r : rows) {
    table.push_back({r.guest.ref.node, std::to_string(r.guest.ref.vmid), r.guest.name, r.guest.status, r.key, r.model,
                     r.mac, r.bridge.empty() ? "-" : r.bridge, r.queues ? std::to_string(*r.queues) : "-",
                     pending_text(r)});
    // Values from the API are one cell each: a name with a newline or an escape sequence forges no row.
    for (auto& cell : table.back()) cell = escape_controls(cell);
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& line : table) {
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  for (const auto& line : table) {
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
      out += line[i];
      if (i + 1 < line.size()) out += std::string(width[i] - line[i].size() + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::cout << out << "\n";
  }
}

// `proxmox nics` from flags to output. Long because the command is read top to bottom: its flag
// checks, one batched read of every VM, then the text or JSON view; each part is a few lines.
int run_nics(const Args& args, const GlobalOptions& globals) {
  const std::string output = args.value_or("output", "text");
  if (output != "text" && output != "json") {
    return fail_command("proxmox nics", Error{"--output must be text or json", {}, {}});
  }
  auto options = args.value("url") ? options_from_flags(args) : options_from_settings(globals);
  if (!options) {
    return fail_command("proxmox nics", options.error());
  }
  if (auto n = args.value("max-in-flight")) {
    try {
      options->max_in_flight = std::max(1, std::stoi(*n));
    } catch (const std::exception&) {
      return fail_command("proxmox nics", Error{"--max-in-flight wants a number, not '" + *n + "'", {}, {}});
    }
  }
  auto client = Client::create(std::move(*options));
  if (!client) {
    return fail_command("proxmox nics", client.error());
  }
  auto guests = (*client)->list_guests();
  if (!guests) {
    return fail_command("proxmox nics", Error{"could not observe the cluster: " + guests.error().to_string(), {}, {}},
                        6);
  }
  const auto nodes = args.values("node");
  std::set<int> vmids;
  for (const auto& v : args.values("vmid")) {
    try {
      vmids.insert(std::stoi(v));
    } catch (const std::exception&) {
      return fail_command("proxmox nics", Error{"--vmid wants a number, not '" + v + "'", {}, {}});
    }
  }
  std::vector<GuestSummary> qemu;
  int containers = 0;
  for (const auto& g : *guests) {
    if (!nodes.empty() && std::ranges::find(nodes, g.ref.node) == nodes.end()) continue;
    if (!vmids.empty() && !vmids.contains(g.ref.vmid)) continue;
    if (g.type == GuestType::lxc) {
      ++containers;
      continue;
    }
    qemu.push_back(g);
  }
  std::ranges::sort(qemu, [](const GuestSummary& a, const GuestSummary& b) { return a.ref < b.ref; });
  if (qemu.empty() && containers == 0 && guests->empty()) {
    // Proxmox lists only what the token may see (VM.Audit): an empty cluster list is almost
    // always a token without privileges, not a cluster without VMs.
    return fail_command("proxmox nics",
                        Error{"the API lists no guest at all: the token sees no VM",
                              {},
                              "grant it VM.Audit on /vms, e.g. `pveum acl modify /vms --tokens USER@REALM!NAME "
                              "--roles PVEAuditor`"},
                        6);
  }
  std::vector<VmRef> refs;
  for (const auto& g : qemu) refs.push_back(g.ref);

  // One GET .../pending per VM gives both the value in effect and the pending one.
  auto pendings = (*client)->read_pendings(refs);
  std::vector<NicRow> rows;
  std::vector<std::pair<VmRef, ApiError>> failures;
  int vms_with_pending = 0;
  for (std::size_t i = 0; i < qemu.size(); ++i) {
    if (!pendings[i]) {
      failures.emplace_back(qemu[i].ref, pendings[i].error());
      continue;
    }
    bool any_pending = false;
    std::vector<NicRow> vm_rows;
    for (const auto& item : pendings[i]->items) {
      if (!is_net_key(item.key)) continue;
      NicRow row;
      row.guest = qemu[i];
      row.key = item.key;
      row.value = item.value.value_or("");
      row.pending = item.pending;
      row.pending_delete = item.delete_ != 0;
      auto spec = NetDeviceSpec::parse(row.value.empty() ? item.pending.value_or("") : row.value);
      if (spec) {
        row.model = spec->model();
        row.mac = spec->mac().value_or("");
        row.bridge = spec->bridge().value_or("");
        row.queues = row.value.empty() ? std::nullopt : spec->queues();
      }
      any_pending = any_pending || item.has_change();
      vm_rows.push_back(std::move(row));
    }
    std::ranges::sort(vm_rows, [](const NicRow& a, const NicRow& b) {
      return std::stoi(a.key.substr(3)) < std::stoi(b.key.substr(3));
    });
    rows.insert(rows.end(), vm_rows.begin(), vm_rows.end());
    if (any_pending) ++vms_with_pending;
  }

  if (output == "json") {
    boost::json::array nics;
    for (const auto& r : rows) {
      boost::json::object o{{"node", r.guest.ref.node},
                            {"vmid", r.guest.ref.vmid},
                            {"name", r.guest.name},
                            {"status", r.guest.status},
                            {"nic", r.key},
                            {"model", r.model},
                            {"mac", r.mac},
                            {"bridge", r.bridge},
                            {"value", r.value}};
      o["queues"] = r.queues ? boost::json::value(*r.queues) : boost::json::value(nullptr);
      o["pending"] = r.pending ? boost::json::value(*r.pending) : boost::json::value(nullptr);
      o["pending_delete"] = r.pending_delete;
      nics.push_back(std::move(o));
    }
    boost::json::array errors;
    for (const auto& [ref, e] : failures) {
      errors.push_back({{"node", ref.node},
                        {"vmid", ref.vmid},
                        {"kind", std::string(to_string(e.kind))},
                        {"message", e.to_string()}});
    }
    std::cout << boost::json::serialize(boost::json::object{{"format", "pathwarden-nics"},
                                                            {"format_version", "1.0"},
                                                            {"nics", nics},
                                                            {"errors", errors},
                                                            {"containers_skipped", containers}})
              << "\n";
  } else {
    print_table(rows);
    std::cout << rows.size() << " NIC" << (rows.size() == 1 ? "" : "s") << " on " << (qemu.size() - failures.size())
              << " VM" << (qemu.size() - failures.size() == 1 ? "" : "s");
    if (vms_with_pending > 0) std::cout << ", " << vms_with_pending << " with changes waiting for a restart";
    if (containers > 0)
      std::cout << "; " << containers << " LXC container" << (containers == 1 ? "" : "s") << " skipped";
    std::cout << "\n";
  }
  for (const auto& [ref, e] : failures) report_problem({SourcePos{ref.to_string(), 0, 0}, e.to_string()});
  return failures.empty() ? 0 : 6;  // a VM not read is not observed: the table's 6, as reconcile says it
}

int run_proxmox(const Args& args, const GlobalOptions& globals) {
  const auto& pos = args.positional();
  if (pos.empty() || pos[0] != "nics" || pos.size() > 1) {
    return fail_command(
        "proxmox", Error{"expected 'nics'" +
                             (pos.empty() ? std::string() : ", not '" + pos[0] + "'" + did_you_mean(pos[0], kActions)),
                         {},
                         "see 'pathwarden proxmox --help'"});
  }
  return run_nics(args, globals);
}

}  // namespace

Command proxmox_command() {
  return {
      .name = "proxmox",
      .summary = "look at the Proxmox cluster: NICs and virtio queues of every VM",
      .usage = "proxmox nics [--node NODE]... [--vmid N]... [--output text|json] [connection options]",
      .description =
          "Lists every NIC of every QEMU guest with its model, MAC, bridge and virtio queues as in effect,\n"
          "and any change still waiting for a restart (pending). Reads go out concurrently over pooled\n"
          "connections. Without --url the connection comes from the controller settings (--config).\n"
          "Secrets come from a file or an environment variable, never from the command line.\n"
          "Exit status: 0 every VM read; 1 bad usage or settings; 6 could not observe (the API did not answer,\n"
          "listed no VM, or a VM could not be read: said on stderr, the others still listed).",
      .options = {{"url", "URL", "Proxmox API, e.g. https://pve1.example.com:8006"},
                  {"token-id", "ID", "API token id USER@REALM!NAME"},
                  {"token-secret-file", "FILE", "file holding the token secret"},
                  {"token-secret-env", "VAR", "environment variable holding the token secret"},
                  {"user", "USER", "user name@realm for ticket login (instead of a token)"},
                  {"password-file", "FILE", "file holding the password"},
                  {"password-env", "VAR", "environment variable holding the password"},
                  {"ca-file", "FILE", "CA certificate(s) to trust (PEM)"},
                  {"fingerprint", "SHA256", "pin the server certificate's SHA-256 fingerprint"},
                  {"insecure", "", "do not verify the server certificate (logged as a warning)"},
                  {"max-in-flight", "N", "concurrent requests (default 16)"},
                  {"node", "NODE", "only guests on this node", true},
                  {"vmid", "N", "only this guest", true},
                  kOutput},
      .run = run_proxmox,
      .actions = {kActions.begin(), kActions.end()},
  };
}

}  // namespace pw::cli
