// SPDX-License-Identifier: GPL-3.0-or-later
// import: the NFS mounts the chosen guests have now, written as one policy file per mount (as
// `terraform import -generate-config-out` writes what exists), never over an existing file. The
// policies describe the mounts as they are, so the next reconcile adopts them without re-making
// one (importer/discover.hpp says how); the operator reviews, writes each reason and commits.
#include <fnmatch.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "ansible/inventory.hpp"
#include "command_errors.hpp"
#include "command_support.hpp"
#include "commands.hpp"
#include "diagnostics/suggest.hpp"
#include "files/atomic_write.hpp"
#include "importer/discover.hpp"
#include "importer/policy_yaml.hpp"
#include "journal/clock.hpp"
#include "policy/loader.hpp"
#include "progress.hpp"
#include "reconcile/context.hpp"
#include "settings/loader.hpp"
#include "settings_file.hpp"

namespace pw::cli {
namespace {

struct Written {
  std::string file;
  importer::ImportedPolicy policy;
};
struct Outcome {
  std::vector<Written> written;
  std::vector<importer::Skipped> left_out;
  std::vector<std::pair<std::string, std::string>> unobserved;    // host, why
  std::vector<std::pair<std::string, proxmox::VmRef>> no_mounts;  // observed, its VM found, no NFS mount
  bool write_failed = false;
};

bool has_policy_files(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".yaml" || ext == ".yml") return true;
  }
  return false;
}

// The inventory hosts --host names (exact, with a did-you-mean, or globs) and those that are the
// VMs --vm names (by the VM's name in Proxmox).
Result<std::vector<std::string>> chosen_hosts(const Args& args, const std::set<std::string>& inventory,
                                              const std::vector<proxmox::GuestSummary>& vms) {
  std::vector<std::string> out;
  auto add = [&](const std::string& h) {
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  };
  const std::vector<std::string_view> names(inventory.begin(), inventory.end());
  for (const auto& pattern : args.values("host")) {
    const bool glob = pattern.find_first_of("*?[") != std::string::npos;
    bool matched = false;
    for (const auto& h : inventory) {
      if (glob ? fnmatch(pattern.c_str(), h.c_str(), 0) == 0 : h == pattern) {
        add(h);
        matched = true;
      }
    }
    if (!matched) {
      return fail("--host " + pattern + ": no host of the inventory" + (glob ? " matches" : " is named so") +
                  did_you_mean(pattern, names));
    }
  }
  for (const auto& vm : args.values("vm")) {
    const auto slash = vm.find('/');
    const std::string node = slash == std::string::npos ? "" : vm.substr(0, slash);
    const std::string id = slash == std::string::npos ? vm : vm.substr(slash + 1);
    const auto it = std::find_if(vms.begin(), vms.end(), [&](const proxmox::GuestSummary& g) {
      return std::to_string(g.ref.vmid) == id && (node.empty() || g.ref.node == node);
    });
    if (it == vms.end()) return fail("--vm " + vm + ": Proxmox lists no such VM");
    if (!inventory.contains(it->name)) {
      return fail("--vm " + vm + ": its name '" + it->name + "' is no host of the inventory", {},
                  "give the guest's inventory name with --host");
    }
    add(it->name);
  }
  return out;
}

// The Proxmox configs to find each guest's VM in: the VMs named like the hosts first (one read
// each), every other VM only when a guest's MACs are not among those.
std::vector<proxmox::VmConfig> read_configs(proxmox::Api& api, const std::vector<proxmox::GuestSummary>& vms,
                                            const std::set<std::string>& names) {
  std::vector<proxmox::VmRef> refs;
  for (const auto& g : vms) {
    if (g.type == proxmox::GuestType::qemu && !g.template_ && (names.empty() || names.contains(g.name)))
      refs.push_back(g.ref);
  }
  std::vector<proxmox::VmConfig> out;
  for (auto& c : api.read_configs(refs)) {
    if (c) out.push_back(std::move(*c));
  }
  return out;
}

// DIR is a directory this user may write into, or can be made: its nearest existing ancestor is.
Status writable_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  auto at = std::filesystem::absolute(dir, ec);
  if (ec) return fail("cannot use the directory: " + ec.message(), dir.string());
  while (!std::filesystem::exists(at, ec) && at.has_parent_path() && at != at.parent_path()) at = at.parent_path();
  if (!std::filesystem::is_directory(at, ec)) {
    return fail("cannot make the directory: " + at.string() + " is not a directory", dir.string());
  }
  if (::access(at.c_str(), W_OK | X_OK) != 0) {
    return fail(std::string("cannot write into ") + at.string() + ": " + std::strerror(errno), dir.string(),
                "run as a user who may, or give another DIR");
  }
  return {};
}

// Writes what passes the policy loader, as `validate` will read it; never over an existing file.
void write_policies(const std::filesystem::path& dir, std::vector<importer::ImportedPolicy> found,
                    const std::string& observed_at, Outcome& out) {
  for (auto& p : found) {
    const auto file = dir / (p.name + ".yaml");
    const auto text = importer::policy_yaml(p, observed_at);
    const auto loaded = policy::load_text(text, file.string());
    if (!loaded.ok()) {
      // A value the policy format refuses (an option, a path): said, never written half-valid.
      out.left_out.push_back({p.host, p.path.empty() ? p.name : p.path,
                              "its policy would not be valid: " + loaded.diagnostics.front().message});
      continue;
    }
    std::error_code made;
    std::filesystem::create_directories(dir, made);  // made when there is a first file, not before
    auto st = files::write_new(file, text, files::Visibility::readable);
    if (!st) {
      out.write_failed = true;
      out.left_out.push_back({p.host, p.path.empty() ? p.name : p.path, "not written: " + st.error().to_string()});
    } else if (!*st) {
      out.left_out.push_back({p.host, p.path.empty() ? p.name : p.path,
                              file.string() + " exists and is not overwritten; move it, or give another DIR"});
    } else {
      out.written.push_back({file.string(), std::move(p)});
    }
  }
}

void print_text(const Outcome& o, const std::filesystem::path& dir) {
  for (const auto& w : o.written) {
    const auto& p = w.policy;
    std::cout << "wrote " << escape_controls(w.file) << ": "
              << escape_controls(p.compose ? "Compose volume " + p.compose->project + "/" + p.compose->volume : p.path)
              << " on " << escape_controls(p.host) << " (" << p.vm.to_string() << "), owner "
              << policy::to_string(p.owner) << ", " << p.nic_device << " (" << escape_controls(p.interface) << ")\n";
  }
  for (const auto& s : o.left_out)
    std::cout << "left out " << escape_controls(s.host) << " " << escape_controls(s.mount) << ": "
              << escape_controls(s.why) << "\n";
  for (const auto& [host, why] : o.unobserved)
    std::cout << "not observed " << escape_controls(host) << ": " << escape_controls(why) << "\n";
  for (const auto& [host, vm] : o.no_mounts)
    std::cout << escape_controls(host) << " (" << vm.to_string() << "): no NFS mount"
              << " (an import takes the mounts in effect; mount the shares first, or write their policies)\n";
  std::cout << o.written.size() << " polic" << (o.written.size() == 1 ? "y" : "ies") << " written, "
            << o.left_out.size() << " mount(s) left out, " << o.unobserved.size() << " guest(s) not observed.\n";
  if (!o.written.empty()) {
    const auto d = escape_controls(dir.string());
    std::cout << "Next: write each `reason:`, create each probe file, then\n  pathwarden validate " << d
              << "\n  pathwarden reconcile --check --diff " << d
              << "   # the adoption: pathwarden's comment above each fstab entry\n  pathwarden reconcile " << d
              << "   # writes it; no mount is re-made\n";
  }
}

boost::json::object to_json(const Outcome& o) {
  boost::json::array written;
  for (const auto& w : o.written) {
    const auto& p = w.policy;
    boost::json::object e{{"file", w.file},           {"policy", p.name},
                          {"host", p.host},           {"node", p.vm.node},
                          {"vmid", p.vm.vmid},        {"nic", p.nic_device},
                          {"interface", p.interface}, {"owner", policy::to_string(p.owner)},
                          {"server", p.server},       {"export", p.export_path}};
    if (p.compose) {
      e["compose"] = boost::json::object{{"project", p.compose->project}, {"volume", p.compose->volume}};
    } else {
      e["path"] = p.path;
    }
    written.push_back(std::move(e));
  }
  boost::json::array left_out;
  for (const auto& s : o.left_out) left_out.push_back({{"host", s.host}, {"mount", s.mount}, {"why", s.why}});
  boost::json::array unobserved;
  for (const auto& [host, why] : o.unobserved) unobserved.push_back({{"host", host}, {"why", why}});
  boost::json::array no_mounts;
  for (const auto& [host, vm] : o.no_mounts)
    no_mounts.push_back({{"host", host}, {"node", vm.node}, {"vmid", vm.vmid}});
  return {{"format", "pathwarden-import"},       {"format_version", "1.0"},
          {"written", std::move(written)},       {"left_out", std::move(left_out)},
          {"unobserved", std::move(unobserved)}, {"no_mounts", std::move(no_mounts)}};
}

// Observes the chosen guests and finds their mounts' policies; where a guest could not be read
// or its VM not found, says why.
std::vector<importer::ImportedPolicy> observe(Runtime& rt, const Args& args, const std::vector<std::string>& hosts,
                                              const std::vector<proxmox::GuestSummary>& vms,
                                              const std::vector<policy::StoragePath>& existing, Outcome& out) {
  guest::FactsRequests asked;
  for (const auto& h : hosts) asked[h].docker_volumes = true;  // a Compose volume is found by Docker's labels
  auto facts = rt.guests->gather_facts(hosts, asked);
  const std::set<std::string> named(hosts.begin(), hosts.end());
  auto configs = read_configs(*rt.api, vms, named);
  std::optional<std::vector<proxmox::VmConfig>> all;
  const importer::Wanted wanted{args.values("mount")};
  std::vector<std::string> taken;
  std::vector<importer::ImportedPolicy> found;
  for (const auto& host : hosts) {
    auto f = facts.find(host);
    if (f == facts.end() || !f->second) {
      out.unobserved.emplace_back(host, f == facts.end() ? "no answer" : reconcile::describe(f->second.error()));
      continue;
    }
    auto vm = importer::vm_of_guest(f->second->interfaces, configs, vms);
    if (!vm) {
      if (!all) all = read_configs(*rt.api, vms, {});  // the guest is not named as its VM
      vm = importer::vm_of_guest(f->second->interfaces, *all, vms);
    }
    if (!vm) {
      out.left_out.push_back({host, "(every mount)", vm.error().to_string()});
      continue;
    }
    auto d = importer::discover(*f->second, *vm, wanted, existing, taken);
    if (d.policies.empty() && d.skipped.empty()) out.no_mounts.emplace_back(host, vm->vm);
    out.left_out.insert(out.left_out.end(), d.skipped.begin(), d.skipped.end());
    for (auto& p : d.policies) found.push_back(std::move(p));
  }
  return found;
}

// `import` from arguments to exit status. Long because it reads top to bottom as the operator's
// checks come: arguments, settings, directory, inventory, the API, then observe and write.
int run_import(const Args& args, const GlobalOptions& globals) {
  if (args.positional().size() > 1) return usage_error("import", Error{"give at most one DIR", {}, {}});
  if (args.values("host").empty() && args.values("vm").empty()) {
    return usage_error(
        "import",
        Error{"name the guests to import from", {}, "--host HOST (globs too: --host 'media-*') or --vm VMID"});
  }
  auto loaded = load_settings(globals);
  if (!loaded) return usage_error("import", loaded.error());
  std::filesystem::path dir;
  if (!args.positional().empty()) {
    dir = args.positional()[0];
  } else {
    auto d = default_policies_dir(*loaded, globals);
    if (!d) return usage_error("import", d.error());
    dir = *d;
  }
  // Checked now (before minutes of observing), made only when there is a file to write: a run
  // that writes nothing leaves nothing behind.
  if (auto st = writable_directory(dir); !st) return usage_error("import", st.error());
  std::vector<policy::StoragePath> existing;
  if (has_policy_files(dir)) {
    const std::array<std::filesystem::path, 1> inputs{dir};
    auto r = settings::load_paths(inputs);
    if (!r.ok()) {
      for (const auto& d : r.diagnostics) report_problem(d);
      return usage_error("import", Error{"the policies there have problems: import adds to a valid directory only",
                                         dir.string(), "fix them first ('pathwarden validate')"});
    }
    existing = std::move(r.paths);
  }
  auto inventory = ansible::read_inventory({loaded->ansible.inventory}, loaded->ansible.playbook_command,
                                           std::chrono::minutes(2), loaded->ansible.vault_password_file);
  if (!inventory) return usage_error("import", inventory.error().with_where("spec.ansible.inventory"));
  const bool text = args.value_or("output", "text") == "text";
  auto rt = make_runtime(std::move(*loaded), globals, {}, {}, progress_sink(text));
  if (!rt) return usage_error("import", rt.error());
  auto vms = (*rt)->api->list_guests();
  if (!vms) {
    // Unobserved, never guessed: without the VMs' NICs no mount can be given its VM and NIC.
    return fail_command("import",
                        Error{"cannot list the Proxmox VMs, so no mount can be matched to its VM and NIC; nothing "
                              "written: " +
                                  reconcile::describe(vms.error()),
                              {},
                              {}},
                        6);
  }
  auto hosts = chosen_hosts(args, inventory->hosts, *vms);
  if (!hosts) return usage_error("import", hosts.error());

  Outcome out;
  auto found = observe(**rt, args, *hosts, *vms, existing, out);
  write_policies(dir, std::move(found), journal::format_utc((*rt)->clock.now()), out);
  if (text) {
    print_text(out, dir);
  } else {
    std::cout << boost::json::serialize(to_json(out)) << "\n";
  }
  if (!out.unobserved.empty()) return 6;
  if (out.write_failed) return 7;
  return 0;
}

}  // namespace

Command import_command() {
  return {.name = "import",
          .summary = "write a policy for each NFS mount the chosen guests have now",
          .usage = "import [DIR] (--host HOST | --vm [NODE/]VMID)... [--mount PATH]... [--output text|json]",
          .description =
              "Observes the guests (over SSH, as every run) and writes one policy file per NFS mount into DIR\n"
              "(default: the settings' policies directory), as the mount is now: the fstab entry's server,\n"
              "export and options byte for byte, a Compose volume's driver_opts, or the kernel's options\n"
              "of a systemd or autofs mount; the VM found by its NICs' MACs, the NIC by the interface\n"
              "that carries the mount's NFS connection. A mount a policy of DIR already describes is left\n"
              "out, and an existing file is never overwritten. The next reconcile adopts each fstab entry\n"
              "without re-making its mount (it writes pathwarden's comment above it). `reason:` is left\n"
              "for you, and the probe file is a suggestion: create it. Exit 0, 6 when a guest or the API\n"
              "did not answer, 7 when a file could not be written, 1 on bad arguments.",
          .options = {{"host", "HOST", "a guest by its inventory name, or those a glob matches (repeatable)", true},
                      {"vm", "[NODE/]VMID",
                       "the guest of this Proxmox VM, by the VM's name in the inventory (repeatable)", true},
                      {"mount", "PATH", "only this mount point (repeatable; default: every NFS mount)", true},
                      kOutput},
          .run = run_import};
}

}  // namespace pw::cli
