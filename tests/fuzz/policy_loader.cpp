// SPDX-License-Identifier: GPL-3.0-or-later
// Policy files come from git, written by people: whatever the bytes, load_text ends in
// diagnostics that point into the file, and whatever it accepts is a policy the rest of
// pathwarden can act on safely (valid ranges, and values that cannot break out of the fstab line
// or the owner comment they end up in).
#include <algorithm>
#include <string>

#include "guest/fstab.hpp"
#include "invariant.hpp"
#include "plan/planner.hpp"
#include "policy/loader.hpp"
#include "settings/loader.hpp"

namespace {

using namespace pw;

constexpr const char* kFile = "fuzz/policy.yaml";

bool one_printable_line(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

void check_diagnostics(const policy::LoadResult& r, std::string_view text) {
  const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const auto& d : r.diagnostics) {
    const std::string shown = fuzz::printable(d.to_string());
    PW_FUZZ_CHECK(d.pos.file == kFile, shown);
    PW_FUZZ_CHECK(!d.message.empty(), shown);
    PW_FUZZ_CHECK(d.pos.line >= 0 && d.pos.line <= lines, shown + " (file has " + std::to_string(lines) + " lines)");
    PW_FUZZ_CHECK(d.pos.line == 0 || d.pos.column >= 1, shown);
    // A diagnostic is one terminal line: the file cannot forge other diagnostics or send escape
    // sequences to the operator's terminal through it.
    PW_FUZZ_CHECK(one_printable_line(d.message), shown);
  }
}

void check_policy(const policy::StoragePath& p) {
  const std::string who = "policy '" + fuzz::printable(p.name) + "'";
  PW_FUZZ_CHECK(!p.name.empty() && p.name.size() <= 63, who);
  PW_FUZZ_CHECK(p.source.file == kFile, who);
  for (const auto& [field, pos] : p.positions) PW_FUZZ_CHECK(pos.file == kFile && pos.line >= 1, who + " " + field);
  PW_FUZZ_CHECK(p.guest.vmid >= 100 && p.guest.vmid <= 999'999'999, who);
  PW_FUZZ_CHECK(!p.guest.node.empty() && !p.guest.host.empty(), who);
  PW_FUZZ_CHECK(p.nic.device.starts_with("net"), who);
  PW_FUZZ_CHECK(!p.nic.queues || (*p.nic.queues >= 1 && *p.nic.queues <= 64), who);
  PW_FUZZ_CHECK(!p.mount.server.empty(), who);
  PW_FUZZ_CHECK(p.mount.export_path.starts_with('/'), who);
  // A Compose volume's path is Docker's: the policy names the volume, never a path. Every other
  // owner names its mount point, and an fstab policy never one of Docker's volumes.
  if (p.mount.owner == policy::MountOwner::compose) {
    PW_FUZZ_CHECK(p.mount.path.empty() && p.mount.compose && !p.mount.compose->project.empty() &&
                      !p.mount.compose->volume.empty(),
                  who + " compose");
  } else {
    PW_FUZZ_CHECK(p.mount.path.starts_with('/') && !p.mount.compose, who);
  }
  PW_FUZZ_CHECK(!p.mount.owned() || !policy::is_docker_volume_path(p.mount.path), who + " fstab on a Docker volume");
  // Nothing that writes is accepted on a read-only mount.
  const bool read_only = p.mount.option("ro") != nullptr;
  PW_FUZZ_CHECK(!read_only || (p.verify.direction == policy::ProbeDirection::read && p.verify.commit_cycles == 0),
                who + " writes on a read-only mount");
  PW_FUZZ_CHECK(p.verify.commit_cycles >= 0 && p.verify.commit_cycles <= 10'000, who + " commit_cycles");
  PW_FUZZ_CHECK(!p.verify.min_commit_rate || (*p.verify.min_commit_rate > 0 && p.verify.commit_cycles > 0),
                who + " min_commit_rate");
  PW_FUZZ_CHECK(one_printable_line(p.mount.reason), who + " reason");
  for (const auto& o : p.mount.options) {
    PW_FUZZ_CHECK(!o.name.empty() && o.to_string().find(',') == std::string::npos, who + " option " + o.to_string());
  }
  PW_FUZZ_CHECK(p.verify.probe_bytes > 0, who);
  PW_FUZZ_CHECK(p.verify.max_probe_bytes >= p.verify.probe_bytes,
                who + ": max_probe_bytes " + std::to_string(p.verify.max_probe_bytes) + " < probe_bytes " +
                    std::to_string(p.verify.probe_bytes));
  PW_FUZZ_CHECK(p.verify.min_share > 0.0 && p.verify.min_share <= 1.0, who);
  PW_FUZZ_CHECK(p.verify.baseline.count() >= 100 && p.verify.baseline.count() <= 600'000, who);
  PW_FUZZ_CHECK(!p.verify.probe_file.empty() && !p.verify.probe_file.starts_with('/'), who);
  if (p.restart.window) {
    const auto& w = *p.restart.window;
    PW_FUZZ_CHECK(std::any_of(w.days.begin(), w.days.end(), [](bool d) { return d; }), who + " window has no day");
    PW_FUZZ_CHECK(w.start_minute >= 0 && w.start_minute < 1440 && w.end_minute >= 0 && w.end_minute < 1440, who);
  }

  // What the policy writes into a guest's fstab is exactly one entry plus its owner comment, and
  // reads back as what the policy says. A mount of another owner is never written.
  if (!p.mount.owned()) return;
  const auto spec = plan::desired_fstab_entry(p);
  auto valid = guest::validate_entry_spec(spec);
  PW_FUZZ_CHECK(valid.has_value(), who + ": " + (valid ? "" : valid.error().to_string()));
  auto fstab = guest::FstabFile::parse("UUID=1 / ext4 defaults 0 1\n");
  auto changed = fstab.set_entry(spec, {p.name, p.mount.reason});
  PW_FUZZ_CHECK(changed.has_value() && *changed, who + ": " + (changed ? "" : changed.error().to_string()));
  const auto printed = fstab.print();
  const auto reread = guest::FstabFile::parse(printed);
  PW_FUZZ_CHECK(reread.lines().size() == 3, who + " fstab: " + fuzz::printable(printed));
  PW_FUZZ_CHECK(reread.diagnostics().empty(), who + " fstab: " + fuzz::printable(printed));
  const auto entry = reread.entry_for(p.mount.path);
  PW_FUZZ_CHECK(entry && entry->spec == spec.spec && entry->vfstype == "nfs",
                who + " fstab: " + fuzz::printable(printed));
  PW_FUZZ_CHECK(entry->options == p.mount.options_string() || (p.mount.options.empty() && entry->options == "defaults"),
                who + " fstab: " + fuzz::printable(printed));
  const auto owner = reread.owner_of(p.mount.path);
  PW_FUZZ_CHECK(owner && owner->policy == p.name, who + " fstab: " + fuzz::printable(printed));
}

void check_controller(const settings::ControllerSettings& c) {
  PW_FUZZ_CHECK(c.source.file == kFile, "controller");
  PW_FUZZ_CHECK(c.proxmox.url.starts_with("https://"), fuzz::printable(c.proxmox.url));
  PW_FUZZ_CHECK(c.proxmox.token_id.empty() != c.proxmox.user.empty(), "exactly one authentication method");
  PW_FUZZ_CHECK(!(c.proxmox.insecure_skip_verify && (!c.proxmox.ca_file.empty() || !c.proxmox.fingerprint.empty())),
                "insecure_skip_verify next to pinned trust");
  PW_FUZZ_CHECK(c.proxmox.max_in_flight >= 1 && c.proxmox.max_in_flight <= 256, "max_in_flight");
  PW_FUZZ_CHECK(c.proxmox.timeout.count() >= 0 && c.ansible.timeout.count() >= 0, "timeouts");
  PW_FUZZ_CHECK(c.ansible.forks >= 1 && c.ansible.forks <= 1000, "forks");
}

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = settings::load_text(text, kFile);
  check_diagnostics(r, text);
  PW_FUZZ_CHECK(!r.ok() || r.paths.size() + r.controllers.size() >= 1, "a valid file yields a policy or settings");
  for (const auto& p : r.paths) check_policy(p);
  for (const auto& c : r.controllers) check_controller(c);
  // The cross-policy checks must cope with whatever one file produced.
  for (const auto& d : policy::check_policy_set(r.paths)) PW_FUZZ_CHECK(!d.message.empty(), d.to_string());

  const auto again = settings::load_text(text, kFile);
  PW_FUZZ_CHECK(again.diagnostics.size() == r.diagnostics.size() && again.paths.size() == r.paths.size(),
                "deterministic");
  for (std::size_t i = 0; i < r.diagnostics.size(); ++i) {
    PW_FUZZ_CHECK(again.diagnostics[i].to_string() == r.diagnostics[i].to_string(), "deterministic");
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
