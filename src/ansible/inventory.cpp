// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/inventory.hpp"

#include <boost/json.hpp>
#include <filesystem>

#include "ansible/child_process.hpp"
#include "ansible/playbook_run.hpp"

namespace pw::ansible {
namespace {

std::string inventory_command(const std::string& playbook_command) {
  const std::filesystem::path p(playbook_command);
  if (p.filename() == "ansible-playbook") return (p.parent_path() / "ansible-inventory").string();
  return "ansible-inventory";
}

}  // namespace

Result<std::set<std::string>> inventory_hosts_from_json(std::string_view json_text) {
  boost::system::error_code ec;
  auto v = boost::json::parse(json_text, ec);
  if (ec || !v.is_object()) return fail("ansible-inventory printed no inventory JSON", "ansible-inventory --list");
  std::set<std::string> out;
  for (const auto& [group, body] : v.as_object()) {
    if (group == "_meta") {
      if (const auto* meta = body.if_object())
        if (const auto* vars = meta->if_contains("hostvars"); vars && vars->is_object())
          for (const auto& [host, _] : vars->as_object()) out.emplace(host);
      continue;
    }
    if (const auto* g = body.if_object())
      if (const auto* hosts = g->if_contains("hosts"); hosts && hosts->is_array())
        for (const auto& h : hosts->as_array())
          if (h.is_string()) out.emplace(h.as_string());
  }
  return out;
}

Result<InventoryHosts> read_inventory(const std::vector<std::string>& inventories, const std::string& playbook_command,
                                      std::chrono::milliseconds timeout, const std::string& vault_password_file) {
  ChildProcessSpec spec;
  spec.argv = {inventory_command(playbook_command), "--list"};
  for (const auto& i : inventories) {
    spec.argv.emplace_back("-i");
    spec.argv.push_back(i);
  }
  spec.environment = {{"ANSIBLE_NOCOLOR", "1"}, {"ANSIBLE_FORCE_COLOR", "0"}};
  if (!vault_password_file.empty()) spec.environment.emplace_back("ANSIBLE_VAULT_PASSWORD_FILE", vault_password_file);
  spec.timeout = timeout;
  auto run = run_child_process(spec);
  if (!run) return std::unexpected(run.error());
  if (run->timed_out) return fail("ansible-inventory --list did not finish in time", spec.argv.front());
  if (run->exit_code != 0) {
    std::string why = run->err.substr(0, run->err.find('\n'));
    return fail("ansible-inventory --list failed: " + (why.empty() ? "exit " + std::to_string(run->exit_code) : why),
                spec.argv.front(), "run it by hand with the same -i to see why");
  }
  auto hosts = inventory_hosts_from_json(run->out);
  if (!hosts) return std::unexpected(hosts.error());
  InventoryHosts out;
  out.hosts = std::move(*hosts);
  out.warnings = ansible_warnings(run->err);
  return out;
}

}  // namespace pw::ansible
