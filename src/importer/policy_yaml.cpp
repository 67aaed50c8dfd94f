// SPDX-License-Identifier: GPL-3.0-or-later
#include "importer/policy_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include "diagnostics/error.hpp"

namespace pw::importer {
namespace {

// A comment holds one line: an observed value's control characters (a newline in a mount
// point would end the comment and start YAML) are escaped.
YAML::_Comment comment(const std::string& text) {
  return YAML::Comment(escape_controls(text));
}

void flow_pair(YAML::Emitter& out, const std::string& key, const YAML::Node& value) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << value;
}

void header(YAML::Emitter& out, const ImportedPolicy& p, const std::string& observed_at) {
  out << comment("Imported by `pathwarden import` from " + p.host + " (" + p.vm.to_string() + ") at " + observed_at +
                 ": the mount as it is, so that the next reconcile adopts it without re-making it.");
  out << YAML::Newline << comment("Mounted: " + p.mounted_as);
  if (!p.fstab_line.empty()) out << YAML::Newline << comment("fstab:   " + p.fstab_line);
  for (const auto& n : p.notes) out << YAML::Newline << comment("Note: " + n);
  out << YAML::Newline;
}

void guest_and_nic(YAML::Emitter& out, const ImportedPolicy& p) {
  YAML::Node guest;
  guest["node"] = p.vm.node;
  guest["vmid"] = p.vm.vmid;
  guest["host"] = p.host;
  flow_pair(out, "guest", guest);
  YAML::Node nic;
  nic["device"] = p.nic_device;
  flow_pair(out, "nic", nic);
  out << comment(p.interface + " in the guest (found by " + p.interface_found_by + "); its queues (" +
                 std::to_string(std::max(1, p.nic_queues.value_or(1))) +
                 " now) are not managed: add `queues: N` for pathwarden to set them");
}

void mount(YAML::Emitter& out, const ImportedPolicy& p) {
  out << YAML::Key << "mount" << YAML::Value << YAML::BeginMap;
  if (p.owner != policy::MountOwner::fstab) {
    out << YAML::Key << "owner" << YAML::Value << std::string(policy::to_string(p.owner));
    out << comment("pathwarden proves this mount and never writes it");
  }
  if (p.compose) {
    YAML::Node compose;
    compose["project"] = p.compose->project;
    compose["volume"] = p.compose->volume;
    flow_pair(out, "compose", compose);
  }
  out << YAML::Key << "server" << YAML::Value << p.server;
  if (!p.nas_addresses.empty()) {
    YAML::Node nas;
    for (const auto& a : p.nas_addresses) nas.push_back(a);
    flow_pair(out, "nas_addresses", nas);
  } else {
    out << comment("the NAS's other addresses, if any, go in nas_addresses: [...] (the trunking risk is checked)");
  }
  out << YAML::Key << "export" << YAML::Value << p.export_path;
  if (!p.path.empty()) out << YAML::Key << "path" << YAML::Value << p.path;
  YAML::Node options(YAML::NodeType::Sequence);
  for (const auto& o : p.options) options.push_back(o);
  flow_pair(out, "options", options);
  if (!p.allow.empty()) {
    YAML::Node allow;
    for (const auto& a : p.allow) allow.push_back(a);
    flow_pair(out, "allow", allow);
    out << comment("as found in the options: review that the share may do this");
  }
  out << YAML::Key << "reason" << YAML::Value << p.reason;
  if (p.reason.empty()) {
    out << comment("for you to write: why the options are what they are (it goes into the fstab comment)");
  }
  out << YAML::EndMap;
}

}  // namespace

std::string policy_yaml(const ImportedPolicy& p, const std::string& observed_at) {
  YAML::Emitter out;
  out.SetIndent(2);
  header(out, p, observed_at);
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "pathwarden/v1";
  out << YAML::Key << "kind" << YAML::Value << "StoragePath";
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::EndMap;
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  guest_and_nic(out, p);
  mount(out, p);
  out << YAML::Key << "verify" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "probe_file" << YAML::Value << p.probe_file;
  const std::string where = p.path.empty() ? "the volume" : p.path;
  out << comment("a file on the share a probe reads: create it once (dd if=/dev/urandom of=" + where + "/" +
                 p.probe_file + " bs=1M count=256) or name a large file that is there");
  out << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::EndMap;
  std::string text = out.c_str();
  text.push_back('\n');
  return text;
}

}  // namespace pw::importer
