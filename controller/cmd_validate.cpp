// SPDX-License-Identifier: GPL-3.0-or-later
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <iostream>
#include <set>
#include <tuple>

#include "ansible/inventory.hpp"
#include "command_errors.hpp"
#include "commands.hpp"
#include "diagnostics/suggest.hpp"
#include "policy/option_notes.hpp"
#include "settings/loader.hpp"
#include "settings_file.hpp"

namespace pw::cli {

namespace {

// What validate can only check on the operator's ground: the files the settings name exist and
// can be read, and every policy's guest.host is a host of the inventory as Ansible reads it.
void check_ground(const settings::ControllerSettings& c, const std::vector<policy::StoragePath>& policies,
                  Diagnostics& diags) {
  const std::pair<const char*, const std::string*> files[] = {
      {"spec.ansible.inventory", &c.ansible.inventory},
      {"spec.proxmox.token_secret_file", &c.proxmox.token_secret_file},
      {"spec.proxmox.password_file", &c.proxmox.password_file},
      {"spec.proxmox.ca_file", &c.proxmox.ca_file},
      {"spec.ansible.private_key_file", &c.ansible.private_key_file},
      {"spec.ansible.known_hosts_file", &c.ansible.known_hosts_file},
      {"spec.ansible.vault_password_file", &c.ansible.vault_password_file}};
  bool inventory_ok = !c.ansible.inventory.empty();
  for (const auto& [field, path] : files) {
    if (path->empty()) continue;
    std::error_code ec;
    const bool there = std::filesystem::exists(*path, ec);
    if (!there) {
      diags.push_back({c.source, std::string(field) + ": " + *path +
                                     " does not exist (relative paths are read from the "
                                     "settings file's directory)"});
    } else if (::access(path->c_str(), R_OK) != 0) {
      diags.push_back({c.source, std::string(field) + ": " + *path + " cannot be read by this user"});
    }
    if (field == std::string_view("spec.ansible.inventory")) inventory_ok = there;
  }
  if (!inventory_ok || policies.empty()) return;
  auto inv = ansible::read_inventory({c.ansible.inventory}, c.ansible.playbook_command, std::chrono::minutes(2),
                                     c.ansible.vault_password_file);
  if (!inv) {
    diags.push_back({c.source, "spec.ansible.inventory: " + inv.error().to_string()});
    return;
  }
  std::vector<std::string_view> names(inv->hosts.begin(), inv->hosts.end());
  for (const auto& p : policies) {
    if (inv->hosts.contains(p.guest.host)) continue;
    std::string msg = "spec.guest.host '" + p.guest.host + "' is not a host of the inventory " + c.ansible.inventory;
    if (names.empty()) {
      msg += ", which names no host at all";
    } else {
      msg += did_you_mean(p.guest.host, names);
    }
    for (const auto& w : inv->warnings) msg += "; ansible: " + w;
    diags.push_back({p.position_of("spec.guest.host"), msg});
  }
}

// The settings validate checks the ground with: those among its inputs, else --config /
// PATHWARDEN_CONFIG / the default file when it exists.
std::optional<settings::ControllerSettings> ground_settings(const settings::LoadResult& r, const GlobalOptions& globals,
                                                            const std::optional<settings::ControllerSettings>& read,
                                                            Diagnostics& diags) {
  if (!r.controllers.empty()) return r.controllers.front();
  if (read) return read;  // read already, for the default policies directory
  std::error_code ec;
  const auto file = settings_file(globals);
  if (!globals.config_file && !std::filesystem::exists(file, ec)) return std::nullopt;
  auto loaded = load_settings(globals);
  if (!loaded) {
    diags.push_back({SourcePos{file.string(), 1, 1}, loaded.error().what});
    return std::nullopt;
  }
  return *loaded;
}

// `validate` from inputs to exit status. Long because its checks run in the order an operator
// reads their messages (files, policies, settings, inventory), each short and said once.
int run_validate(const Args& args, const GlobalOptions& globals) {
  std::vector<std::filesystem::path> inputs;
  for (const auto& p : args.positional()) inputs.emplace_back(p);
  std::optional<settings::ControllerSettings> read;  // the settings file, read once
  if (inputs.empty()) {
    auto loaded = load_settings(globals);
    if (!loaded) {
      return fail_command("validate", loaded.error());
    }
    read = std::move(*loaded);
    auto dir = default_policies_dir(*read, globals);
    if (!dir) {
      return fail_command("validate", dir.error());
    }
    inputs.emplace_back(*dir);
  }
  auto result = settings::load_paths(inputs);
  auto& diags = result.diagnostics;
  bool grounded = false;  // the settings were there: their files and the inventory were checked
  if (diags.empty()) {
    if (auto ground = ground_settings(result, globals, read, diags)) {
      check_ground(*ground, result.paths, diags);
      grounded = true;
    }
  }
  std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.pos.file, a.pos.line, a.pos.column) < std::tie(b.pos.file, b.pos.line, b.pos.column);
  });
  std::set<std::string> bad_files;
  for (const auto& d : diags) bad_files.insert(d.pos.file);
  // What some options really do (policy/option_notes.hpp): shown, never a problem.
  Diagnostics notes;
  if (diags.empty() && !grounded) {
    // Never a silent pass: say what could not be checked without the controller settings.
    notes.push_back({SourcePos{settings_file(globals).string(), 0, 0},
                     "no controller settings here (give --config, or PATH a settings file): the files they name "
                     "and every policy's guest.host against the inventory were not checked"});
  }
  for (const auto& p : result.paths) {
    const SourcePos at = p.positions.find("spec.mount.options").value_or(p.source);
    for (auto& n : policy::option_notes(p.mount)) notes.push_back({at, std::move(n.message)});
  }

  if (args.value_or("output", "text") == "json") {
    boost::json::array problems;
    for (const auto& d : diags) {
      problems.push_back(
          {{"file", d.pos.file}, {"line", d.pos.line}, {"column", d.pos.column}, {"message", d.message}});
    }
    boost::json::array names;
    for (const auto& p : result.paths) names.push_back(boost::json::string(p.name));
    boost::json::array note_list;
    for (const auto& n : notes) {
      note_list.push_back(
          {{"file", n.pos.file}, {"line", n.pos.line}, {"column", n.pos.column}, {"message", n.message}});
    }
    boost::json::object out{{"format", "pathwarden-validate"},
                            {"format_version", "1.0"},
                            {"valid", diags.empty()},
                            {"policies", names},
                            {"controllers", result.controllers.size()},
                            {"problems", problems},
                            {"notes", note_list}};
    std::cout << boost::json::serialize(out) << "\n";
  } else {
    for (const auto& d : diags) std::cout << d.to_string() << "\n";
    for (const auto& n : notes) std::cout << Diagnostic{n.pos, "note: " + n.message}.to_string() << "\n";
    if (diags.empty()) {
      std::cout << "ok: " << result.paths.size() << " storage path polic" << (result.paths.size() == 1 ? "y" : "ies");
      if (!result.controllers.empty()) std::cout << ", " << result.controllers.size() << " controller settings";
      std::cout << "\n";
      if (args.flag("list")) {
        // One line a policy: what --policy/--exclude take, and where it is written.
        for (const auto& p : result.paths) {
          std::cout << p.name << "  " << p.source.to_string() << "  " << p.guest.node << "/" << p.guest.vmid << " "
                    << p.guest.host << "\n";
        }
      }
    } else {
      std::cout << diags.size() << " problem" << (diags.size() == 1 ? "" : "s") << " in " << bad_files.size() << " file"
                << (bad_files.size() == 1 ? "" : "s") << "\n";
    }
  }
  return diags.empty() ? 0 : 1;
}

}  // namespace

Command validate_command() {
  return {
      .name = "validate",
      .summary = "check policy and controller settings files and report every problem",
      .usage = "validate [--list] [--output text|json] [PATH...]",
      .description =
          "PATH is a file or a directory (every *.yaml/*.yml below it; hidden directories such as .git\n"
          "are skipped). Without PATH, the policies directory of the controller settings is checked.\n"
          "With controller settings (among PATH, or --config / PATHWARDEN_CONFIG / the default file),\n"
          "the files they name must exist and be readable, and every policy's guest.host must be a host\n"
          "of the inventory as `ansible-inventory --list` reads it (so dynamic inventories count).\n"
          "Each problem is printed as file:line:col: message. Exit status: 0 valid, 1 problems found.",
      .options = {{"list", "", "also list the policies: name, file:line, node/vmid and host (the JSON always does)"},
                  kOutput},
      .run = run_validate,
  };
}

}  // namespace pw::cli
