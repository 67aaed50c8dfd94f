// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/unowned_mount.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "guest/mounts.hpp"

namespace pw::plan {
namespace {

// fstab's own options: they mean nothing to Docker's mount(2) or in a unit's Options= of a
// mount that is not in fstab, so they are neither compared nor put into the remedy.
bool fstab_only(std::string_view name) {
  return name == "_netdev" || name == "nofail" || name == "noauto" || name == "auto" || name == "user" ||
         name == "users" || name == "defaults" || name.starts_with("x-systemd.") || name.starts_with("comment=");
}

std::string canonical_option(std::string_view name) {
  return name == "nfsvers" ? "vers" : std::string(name);
}

const guest::MountOption* find_option(const std::vector<guest::MountOption>& opts, std::string_view name) {
  const auto want = canonical_option(name);
  for (const auto& o : opts) {
    if (canonical_option(o.name) == want) return &o;
  }
  return nullptr;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

std::vector<std::string> policy_options(const policy::StoragePath& p) {
  std::vector<std::string> out;
  for (const auto& o : p.mount.options) {
    if (!fstab_only(o.name)) out.push_back(o.to_string());
  }
  return out;
}

std::string nfs_source(const policy::StoragePath& p) {
  const bool v6 = p.mount.server.find(':') != std::string::npos;
  return (v6 ? "[" + p.mount.server + "]" : p.mount.server) + ":" + p.mount.export_path;
}

// A Compose volume's driver_opts against the policy.
std::vector<std::string> compose_differences(const guest::DockerVolume& v, const policy::StoragePath& written,
                                             const policy::StoragePath& resolved) {
  std::vector<std::string> diffs;
  if (v.driver != "local") diffs.push_back("uses the volume driver '" + v.driver + "', not local");
  const auto* type = v.option("type");
  if (type == nullptr || (*type != "nfs" && *type != "nfs4")) {
    diffs.push_back("driver_opts type is '" + (type ? *type : std::string()) + "', not nfs");
  }
  const auto* device = v.option("device");
  const std::string dev = device ? *device : std::string();
  const auto colon = dev.rfind(":/");
  if (colon == std::string::npos || dev.substr(colon + 1) != written.mount.export_path) {
    diffs.push_back("driver_opts device is '" + dev + "', not ':" + written.mount.export_path + "'");
  }
  const auto* o = v.option("o");
  const auto opts = guest::split_mount_options(o ? *o : std::string());
  const auto* addr = find_option(opts, "addr");
  if (addr == nullptr || !addr->value ||
      (*addr->value != written.mount.server && *addr->value != resolved.mount.server)) {
    diffs.push_back("addr is " + (addr && addr->value ? *addr->value : std::string("not set")) + " instead of " +
                    written.mount.server);
  }
  for (const auto& want : written.mount.options) {
    if (fstab_only(want.name)) continue;
    const auto* have = find_option(opts, want.name);
    if (have == nullptr) {
      diffs.push_back("has no " + want.to_string());
    } else if (have->value != want.value) {
      diffs.push_back("has " + have->name + (have->value ? "=" + *have->value : "") + " instead of " +
                      want.to_string());
    }
  }
  if (find_option(opts, "ro") != nullptr && written.mount.option("ro") == nullptr)
    diffs.emplace_back("is read-only (ro)");
  return diffs;
}

}  // namespace

std::string other_owner_of(const std::vector<guest::MountInfo>& mounts, const guest::MountInfo& m) {
  if (policy::is_docker_volume_path(m.mount_point)) return "Docker";
  for (const auto& other : mounts) {
    if (other.fstype != "autofs") continue;
    // A direct map's trigger sits at the mount point itself; an indirect map's (auto.master
    // "/mnt/nas /etc/auto.nas", the usual kind) at the directory its keys are mounted under.
    const auto& at = other.mount_point;
    if (m.mount_point == at || (m.mount_point.starts_with(at) && m.mount_point.size() > at.size() &&
                                (at.ends_with('/') || m.mount_point[at.size()] == '/'))) {
      return "autofs";
    }
  }
  return {};
}

std::string compose_o_option(const policy::StoragePath& written) {
  std::vector<std::string> parts{"addr=" + written.mount.server};
  for (auto& o : policy_options(written)) parts.push_back(std::move(o));
  return join(parts, ",");
}

std::string systemd_mount_unit(std::string_view raw) {
  // systemd-escape --path: the path simplified first (repeated slashes as one, "." components
  // dropped, as path_simplify does: "/mnt//a" and "/mnt/./a" are both mnt-a.mount), then
  // leading and trailing slashes trimmed, '/' → '-', anything but [A-Za-z0-9:_.] (and a
  // leading '.') as \xNN; the root is "-".
  std::string simplified;
  for (std::size_t i = 0; i < raw.size();) {
    const auto slash = raw.find('/', i);
    const auto part = raw.substr(i, slash == std::string_view::npos ? std::string_view::npos : slash - i);
    if (!part.empty() && part != ".") {
      if (!simplified.empty()) simplified += '/';
      simplified += part;
    }
    if (slash == std::string_view::npos) break;
    i = slash + 1;
  }
  const std::string_view path = simplified;
  if (path.empty()) return "-.mount";
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c == '/') {
      out += '-';
    } else if ((std::isalnum(c) != 0 || c == ':' || c == '_' || (c == '.' && i > 0)) && c < 0x80) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + ".mount";
}

Result<UnownedMount> locate_unowned_mount(const policy::StoragePath& written, const policy::StoragePath& resolved,
                                          const guest::GuestFacts& facts) {
  const auto where = written.position_of("spec.mount.owner").to_string();
  UnownedMount out;
  switch (written.mount.owner) {
    case policy::MountOwner::fstab:
      return fail("an fstab mount is pathwarden's own", where);
    case policy::MountOwner::compose: {
      if (!written.mount.compose) return fail("owner: compose without spec.mount.compose", where);
      const auto& ref = *written.mount.compose;
      if (!facts.docker)
        return fail("Docker's volumes were not read in " + written.guest.host, where, "gather the facts again");
      if (!*facts.docker) return std::unexpected(facts.docker->error());
      const auto* v = guest::find_compose_volume(**facts.docker, ref.project, ref.volume);
      if (v == nullptr) {
        return fail("guest " + written.guest.host + " has no volume '" + ref.volume + "' of Compose project '" +
                        ref.project + "' (docker volume ls --filter label=com.docker.compose.project=" + ref.project +
                        " lists none); Compose creates it at the project's first 'docker compose up'",
                    written.position_of("spec.mount.compose").to_string(),
                    "check the project name ('docker compose ls') and the key under 'volumes:' in its Compose file");
      }
      out.path = v->mountpoint;
      out.volume_name = v->name;
      const auto* o = v->option("o");
      const auto* device = v->option("device");
      out.configured = "driver_opts o: " + (o ? *o : std::string("(none)")) +
                       ", device: " + (device ? *device : std::string("(none)"));
      out.differences = compose_differences(*v, written, resolved);
      return out;
    }
    case policy::MountOwner::systemd:
      if (auto entry = facts.fstab.entry_for(written.mount.path)) {
        return fail(written.mount.path +
                        " has an fstab entry: its .mount unit is made from fstab by "
                        "systemd-fstab-generator, so the entry is what to manage",
                    where, "use owner: fstab (the default) for this mount");
      }
      out.path = written.mount.path;
      return out;
    case policy::MountOwner::autofs:
      out.path = written.mount.path;
      return out;
  }
  return fail("unknown mount owner", where);
}

std::vector<std::string> unowned_remedy(const policy::StoragePath& written, const UnownedMount& mount) {
  std::vector<std::string> out;
  const auto options = join(policy_options(written), ",");
  switch (written.mount.owner) {
    case policy::MountOwner::fstab:
      break;
    case policy::MountOwner::compose: {
      const auto& ref = *written.mount.compose;
      out.push_back("in project " + ref.project + "'s Compose file, under volumes: " + ref.volume +
                    ": set driver: local and driver_opts: {type: nfs, o: \"" + compose_o_option(written) +
                    "\", device: \":" + written.mount.export_path + "\"}");
      // Docker's own name: a Compose file's `name:` makes it other than PROJECT_VOLUME, and
      // `docker volume rm pg_pgdata` would then remove nothing (or another volume).
      const std::string docker_name = mount.volume_name.empty() ? ref.docker_name() : mount.volume_name;
      // Compose v1's refusal in its own words (measured in the lab, tests/lab/README.md).
      out.push_back("in the project's directory: docker compose down && docker volume rm " + docker_name +
                    " && docker compose up -d (Compose v1: docker-compose). Compose keeps an existing volume with "
                    "its old options (v1 refuses to start: 'Configuration for volume " +
                    ref.volume +
                    " specifies \"o\" driver_opt ..., but a volume with the same name uses a different \"o\" "
                    "driver_opt'), so the volume is removed: that drops Docker's record and its empty mount point, "
                    "the data stays on the NAS");
      break;
    }
    case policy::MountOwner::systemd: {
      const auto unit = systemd_mount_unit(mount.path);
      out.push_back("in the unit " + unit + " ('systemctl cat " + unit +
                    "' shows its file) set What=" + nfs_source(written) + ", Type=nfs and Options=" + options);
      out.push_back("systemctl daemon-reload && systemctl restart " + unit +
                    " (a restart unmounts and mounts anew: remount cannot change the NFS version or nconnect)");
      break;
    }
    case policy::MountOwner::autofs:
      out.push_back("in the autofs map that holds " + written.mount.path +
                    " (/etc/auto.master names the maps; 'automount -m' prints them) set the entry to: -fstype=nfs," +
                    options + " " + nfs_source(written));
      out.push_back("systemctl reload autofs, then umount " + written.mount.path +
                    " (or wait for its timeout): autofs uses the new options at the next mount");
      break;
  }
  out.push_back("then prove it: pathwarden verify --probe --policy " + written.name);
  return out;
}

std::vector<std::string> stale_mount_remedy(const policy::StoragePath& written, const UnownedMount& mount) {
  // A new mount looks the export's root up again; its configuration is right, so only its owner's
  // way of unmounting and mounting it again is named (docs/field-next-upstream.md §3.3).
  std::vector<std::string> out;
  switch (written.mount.owner) {
    case policy::MountOwner::fstab:
      out.push_back("umount -l " + mount.path + " && mount " + mount.path);
      break;
    case policy::MountOwner::compose:
      out.push_back("in project " + written.mount.compose->project +
                    "'s directory: docker compose down && docker compose up -d (Compose v1: docker-compose): "
                    "Docker unmounts the volume when its last container stops and mounts it anew at the next "
                    "start; the volume and the data on the NAS stay (a restart of the container is not enough "
                    "while another container holds the volume)");
      break;
    case policy::MountOwner::systemd:
      out.push_back("systemctl restart " + systemd_mount_unit(mount.path) + " (unmounts and mounts anew)");
      break;
    case policy::MountOwner::autofs:
      out.push_back("umount -l " + mount.path + ": autofs mounts it anew at the next access");
      break;
  }
  out.emplace_back("processes that still hold files of the old mount keep failing until they are restarted");
  out.push_back("then prove it: pathwarden verify --probe --policy " + written.name);
  return out;
}

}  // namespace pw::plan
