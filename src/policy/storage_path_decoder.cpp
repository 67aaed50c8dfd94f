// SPDX-License-Identifier: GPL-3.0-or-later
// Over 400 lines on purpose: one decoder class per section of one document kind (StoragePath),
// sharing the decoder state and the cross-section checks; split, they would pass it all around.
#include "policy/storage_path_decoder.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <set>

#include "diagnostics/suggest.hpp"
#include "policy/mount_options.hpp"
#include "policy/yaml_schema.hpp"

namespace pw::policy {
namespace {

using namespace schema;

bool is_object_name(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'; };
  return std::all_of(s.begin(), s.end(), ok) && std::isalnum(static_cast<unsigned char>(s.front())) &&
         std::isalnum(static_cast<unsigned char>(s.back()));
}

constexpr std::array<std::string_view, 6> kSpecKeys{"guest", "nic", "mount", "verify", "restart", "rollback"};
constexpr std::array<std::string_view, 3> kGuestKeys{"node", "vmid", "host"};
constexpr std::array<std::string_view, 3> kNicKeys{"device", "queues", "mtu"};
constexpr std::array<std::string_view, 10> kMountKeys{"owner", "compose", "server", "nas_addresses", "export",
                                                      "path",  "options", "reason", "allow",         "trunking"};
// Options that widen what the share may do in the guest: written only with spec.mount.allow.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kPrivilegedOptions{{
    {"suid", "set-user-ID and set-group-ID programs on the share run with their owner's rights in the guest"},
    {"dev", "device files on the share open the guest's devices"},
    {"exec", "programs on the share run in the guest"},
}};
constexpr std::array<std::string_view, 2> kComposeKeys{"project", "volume"};
constexpr std::array<std::string_view, 9> kVerifyKeys{"probe_file",    "probe_bytes",     "max_probe_bytes",
                                                      "min_share",     "direction",       "baseline",
                                                      "commit_cycles", "min_commit_rate", "probe_as"};
// Commit-latency cycles: enough for a rate, bounded so a slow path cannot hold a run for long.
constexpr int kDefaultCommitCycles = 256;
constexpr int kMaxCommitCycles = 10'000;
constexpr std::array<std::string_view, 2> kRestartKeys{"allowed", "window"};
constexpr std::array<std::string_view, 2> kRollbackKeys{"on_inconclusive", "verify_restored"};
// Mount points a policy must never take over (policies/README.md lists them): anything under
// these (a share over /etc/cron.d or /root/.ssh would run or let in what the NAS holds) ...
constexpr std::array<std::string_view, 15> kSystemTrees{"/bin",   "/boot",  "/dev",    "/etc",  "/lib",
                                                        "/lib32", "/lib64", "/libx32", "/proc", "/root",
                                                        "/run",   "/sbin",  "/sys",    "/usr",  "/var/lib/dpkg"};
// ... and these themselves (shares below them are common: /var/lib/postgresql, /home/alice).
constexpr std::array<std::string_view, 8> kSystemDirs{"/",        "/home",    "/tmp",     "/var",
                                                      "/var/lib", "/var/log", "/var/tmp", "/var/cache"};

// The system directory `path` is or lies under, if any.
std::optional<std::string_view> system_directory(std::string_view path) {
  for (auto d : kSystemDirs) {
    if (path == d) return d;
  }
  for (auto t : kSystemTrees) {
    if (path == t || (path.starts_with(t) && path[t.size()] == '/')) return t;
  }
  return std::nullopt;
}

class StoragePathDecoder {
 public:
  StoragePathDecoder(Decoder& d, StoragePath& out) : d_(d), out_(out) {}

  void decode(const Section& top) {
    if (auto md = top.require("metadata"))
      metadata(Section(d_, *md, "metadata", kMetadataKeys, top.value_pos("metadata")));
    auto spec_node = top.require("spec");
    if (!spec_node) return;
    Section spec(d_, *spec_node, "spec", kSpecKeys, top.value_pos("spec"));
    if (!spec.valid()) return;
    if (auto n = spec.require("guest")) guest(Section(d_, *n, "spec.guest", kGuestKeys, spec.value_pos("guest")));
    if (auto n = spec.require("nic")) nic(Section(d_, *n, "spec.nic", kNicKeys, spec.value_pos("nic")));
    if (auto n = spec.require("mount")) mount(Section(d_, *n, "spec.mount", kMountKeys, spec.value_pos("mount")));
    if (auto n = spec.require("verify")) verify(Section(d_, *n, "spec.verify", kVerifyKeys, spec.value_pos("verify")));
    if (auto n = spec.get("restart")) restart(Section(d_, *n, "spec.restart", kRestartKeys, spec.value_pos("restart")));
    if (auto n = spec.get("rollback")) {
      rollback(Section(d_, *n, "spec.rollback", kRollbackKeys, spec.value_pos("rollback")));
    }
    across_sections();
  }

 private:
  void remember(const Section& s, std::string_view key) { out_.positions[s.child(key)] = s.value_pos(key); }

  // Checks between fields of different sections, once all are read.
  void across_sections() {
    const bool read_only = out_.mount.option("ro") != nullptr;
    if (read_only && out_.verify.commit_cycles > 0) {
      const auto at = out_.positions.find("spec.verify.commit_cycles");
      const auto min_at = out_.positions.find("spec.verify.min_commit_rate");
      d_.error(at ? *at : *min_at,
               "a commit-latency figure writes on the mount, but the mount is read-only ('ro' in "
               "spec.mount.options); leave out commit_cycles and min_commit_rate");
    }
    const auto direction = out_.positions.find("spec.verify.direction");
    if (out_.verify.direction == ProbeDirection::write && out_.mount.option("ro") && direction) {
      const auto options = out_.positions.find("spec.mount.options");
      d_.error(*direction, "'spec.verify.direction' is write, but the mount is read-only ('ro' in spec.mount.options" +
                               (options ? " at " + std::to_string(options->line) + ":" + std::to_string(options->column)
                                        : std::string()) +
                               "): a write probe cannot run there; use direction: read");
    }
    // A Compose volume's mount point is Docker's, under /var/lib/docker (0710 root): only root
    // reaches a file there, so root is the least privilege that can read it.
    if (out_.mount.owner == MountOwner::compose && !out_.positions.find("spec.verify.probe_as"))
      out_.verify.probe_as_root = true;
  }

  void metadata(const Section& s) {
    if (!s.valid()) return;
    if (auto v = s.require("name"); v && (remember(s, "name"), true)) {
      if (auto name = read_string(d_, *v, s.child("name"))) {
        if (is_object_name(*name)) {
          out_.name = *name;
        } else {
          d_.error(d_.pos(*v), "'metadata.name' is '" + *name +
                                   "'; use 1-63 lower-case letters, digits, '-', '.' or '_', starting and "
                                   "ending with a letter or digit");
        }
      }
    }
    if (auto v = s.get("description")) read_string(d_, *v, s.child("description"));
    if (auto v = s.get("labels")) {
      if (!v->IsMap()) {
        d_.error(d_.pos(*v), "'metadata.labels' must be a mapping of names to strings, got " + kind_of(*v));
      } else {
        for (auto it = v->begin(); it != v->end(); ++it) {
          if (!it->first.IsScalar() || !it->second.IsScalar()) {
            d_.error(d_.pos(it->first), "'metadata.labels' entries must be name: string");
          } else {
            out_.labels[it->first.Scalar()] = it->second.Scalar();
          }
        }
      }
    }
  }

  void guest(const Section& s) {
    if (!s.valid()) return;
    if (auto v = s.require("node")) {
      remember(s, "node");
      if (auto node = read_string(d_, *v, s.child("node"))) {
        if (is_host_name(*node) && node->find('.') == std::string::npos) {
          out_.guest.node = *node;
        } else {
          d_.error(d_.pos(*v), "'spec.guest.node' is '" + *node +
                                   "', which is not a Proxmox node name (a host name "
                                   "without dots, as 'pvecm nodes' lists it)");
        }
      }
    }
    if (auto v = s.require("vmid")) {
      remember(s, "vmid");
      // Proxmox reserves 0-99; its upper bound is 999,999,999.
      if (auto id = read_int(d_, *v, s.child("vmid"), 100, 999'999'999)) out_.guest.vmid = static_cast<int>(*id);
    }
    if (auto v = s.require("host")) {
      remember(s, "host");
      if (auto host = read_string(d_, *v, s.child("host"))) {
        if (host->empty() || host->front() == '-' || std::any_of(host->begin(), host->end(), [](char c) {
              return c == ' ' || c == '\t' || c == ',' || c == ':';
            })) {
          d_.error(d_.pos(*v), "'spec.guest.host' is '" + *host +
                                   "', which is not an Ansible inventory host name (no spaces, commas or colons, "
                                   "not starting with '-')");
        } else {
          out_.guest.host = *host;
        }
      }
    }
  }

  void nic(const Section& s) {
    if (!s.valid()) return;
    if (auto v = s.require("device")) {
      remember(s, "device");
      if (auto dev = read_string(d_, *v, s.child("device"))) {
        int index = -1;
        if (dev->starts_with("net") && dev->size() > 3 && dev->size() <= 5) {
          auto [p, ec] = std::from_chars(dev->data() + 3, dev->data() + dev->size(), index);
          if (ec != std::errc{} || p != dev->data() + dev->size() || (dev->size() == 5 && (*dev)[3] == '0')) index = -1;
        }
        if (index < 0 || index > 31) {
          d_.error(d_.pos(*v), "'spec.nic.device' is '" + *dev +
                                   "'; it must name a Proxmox NIC key net0..net31 (as in 'qm config VMID')");
        } else {
          out_.nic.device = *dev;
        }
      }
    }
    if (auto v = s.get("queues")) {
      remember(s, "queues");
      if (auto q = read_int(d_, *v, s.child("queues"), 1, 64)) out_.nic.queues = static_cast<int>(*q);
    }
    // 576: below it qemu-server refuses to start a VM with an explicit mtu= (print_netdevice_full);
    // 65520: Proxmox's own maximum for netN mtu.
    if (auto v = s.get("mtu")) {
      remember(s, "mtu");
      if (auto m = read_int(d_, *v, s.child("mtu"), 576, 65520)) out_.nic.mtu = static_cast<int>(*m);
    }
  }

  void owner(const Section& s) {
    if (auto v = s.get("owner")) {
      remember(s, "owner");
      if (auto o = read_string(d_, *v, s.child("owner"))) {
        auto it = std::find(kMountOwners.begin(), kMountOwners.end(), *o);
        if (it == kMountOwners.end()) {
          d_.error(d_.pos(*v), "'spec.mount.owner' is '" + *o +
                                   "'; use fstab (pathwarden writes the entry), compose, systemd or autofs (pathwarden "
                                   "only observes and proves)" +
                                   did_you_mean(*o, kMountOwners));
        } else {
          out_.mount.owner = static_cast<MountOwner>(it - kMountOwners.begin());
        }
      }
    }
    auto v = s.get("compose");
    if (out_.mount.owner != MountOwner::compose) {
      if (v) {
        d_.error(s.value_pos("compose"), "'spec.mount.compose' names a Compose volume, but spec.mount.owner is " +
                                             std::string(to_string(out_.mount.owner)) + "; add owner: compose");
      }
      return;
    }
    if (!v) {
      d_.error(s.value_pos("owner"),
               "owner: compose needs 'spec.mount.compose: {project: NAME, volume: NAME}' "
               "(the Compose project and the volume's key under 'volumes:')");
      return;
    }
    remember(s, "compose");
    Section c(d_, *v, "spec.mount.compose", kComposeKeys, s.value_pos("compose"));
    if (!c.valid()) return;
    ComposeVolume ref;
    // Compose's own rules: project names are lower-case letters, digits, '-' and '_' starting
    // with a letter or digit; volume keys also allow upper case and '.'.
    auto name = [&](const char* key, std::string_view extra) -> std::optional<std::string> {
      auto n = c.require(key);
      if (!n) return std::nullopt;
      auto text = read_string(d_, *n, c.child(key));
      if (!text) return std::nullopt;
      const std::string allowed = std::string("abcdefghijklmnopqrstuvwxyz0123456789_-").append(extra);
      if (text->empty() || text->find_first_not_of(allowed) != std::string::npos ||
          !std::isalnum(static_cast<unsigned char>(text->front()))) {
        // One closing parenthesis for either name; a volume key's '.' is named where it is allowed.
        const bool project_name = extra.empty();
        d_.error(d_.pos(*n), "'" + c.child(key) + "' is '" + *text + "', which is not a Compose " + key +
                                 " name (letters, digits, " + (project_name ? "'-' and '_'" : "'-', '_' and '.'") +
                                 ", starting with a letter or digit" +
                                 (project_name ? ", lower case: docker compose ls shows it" : "") + ")");
        return std::nullopt;
      }
      return text;
    };
    auto project = name("project", "");
    auto volume = name("volume", "ABCDEFGHIJKLMNOPQRSTUVWXYZ.");
    if (project && volume) out_.mount.compose = ComposeVolume{*project, *volume};
  }

  void mount(const Section& s) {
    if (!s.valid()) return;
    owner(s);
    if (auto v = s.require("server")) {
      remember(s, "server");
      if (auto a = read_address(d_, *v, s.child("server"))) out_.mount.server = *a;
    }
    if (auto v = s.get("nas_addresses")) {
      remember(s, "nas_addresses");
      if (!v->IsSequence()) {
        d_.error(d_.pos(*v), "'spec.mount.nas_addresses' must be a list of addresses, got " + kind_of(*v));
      } else {
        std::set<std::string> seen;
        for (std::size_t i = 0; i < v->size(); ++i) {
          const YAML::Node item = (*v)[i];
          const std::string path = s.child("nas_addresses") + "[" + std::to_string(i) + "]";
          auto a = read_address(d_, item, path);
          if (!a) continue;
          if (*a == out_.mount.server) {
            d_.error(d_.pos(item),
                     "'" + path + "' is the mount's own server address; list only the NAS's other addresses");
          } else if (!seen.insert(*a).second) {
            d_.error(d_.pos(item), "'" + path + "' lists " + *a + " twice");
          } else {
            out_.mount.nas_addresses.push_back(*a);
          }
        }
      }
    }
    if (auto v = s.require("export")) {
      remember(s, "export");
      if (auto e = read_abs_path(d_, *v, s.child("export"))) out_.mount.export_path = *e;
    }
    if (out_.mount.owner == MountOwner::compose) {
      if (s.get("path")) {
        d_.error(s.value_pos("path"),
                 "a Compose volume's path is Docker's (the Mountpoint 'docker volume inspect' "
                 "shows, where it mounts the share while a container uses it); leave out "
                 "spec.mount.path");
      }
    } else if (auto v = s.require("path")) {
      remember(s, "path");
      if (auto p = read_abs_path(d_, *v, s.child("path"))) {
        if (auto sys = system_directory(*p)) {
          d_.error(d_.pos(*v), "'spec.mount.path' is '" + *p + "', " +
                                   (*sys == *p ? std::string("a system directory")
                                               : "under the system directory " + std::string(*sys)) +
                                   "; mount the share elsewhere (policies/README.md lists them)");
        } else if (out_.mount.owner == MountOwner::fstab && is_docker_volume_path(*p)) {
          d_.error(d_.pos(*v), "'spec.mount.path' is '" + *p +
                                   "', a Docker volume's mount point: Docker mounts it itself from the volume's "
                                   "driver_opts, and an fstab entry there would compete with Docker's mount; name the "
                                   "volume instead: owner: compose, compose: {project: NAME, volume: NAME}");
        } else {
          out_.mount.path = *p;
        }
      }
    }
    if (auto v = s.get("reason")) {
      remember(s, "reason");
      if (auto r = read_string(d_, *v, s.child("reason"))) out_.mount.reason = *r;
    }
    std::set<std::string, std::less<>> allowed;
    if (auto v = s.get("allow")) {
      remember(s, "allow");
      allowed = allow(*v, s.child("allow"));
    }
    if (auto v = s.get("options")) {
      remember(s, "options");
      options(*v, s.child("options"));
    }
    for (const auto& [name, what] : kPrivilegedOptions) {
      const auto* o = out_.mount.option(name);
      if (o != nullptr && !allowed.contains(name)) {
        const auto at = option_pos_.find(std::string(name));
        d_.error(at != option_pos_.end() ? at->second : s.value_pos("options"),
                 "'spec.mount.options' has '" + std::string(name) + "': " + std::string(what) +
                     "; write it only on purpose, with spec.mount.allow: [" + std::string(name) +
                     "] (or leave it out)");
      }
    }
    if (auto v = s.get("trunking")) {
      remember(s, "trunking");
      trunking(*v, s.child("trunking"));
    }
  }

  // spec.mount.trunking, checked against the options it depends on: each choice must be able to
  // hold on the mount as written, or `validate` says why here rather than the guest at apply.
  void trunking(const YAML::Node& v, const std::string& path) {
    auto text = read_string(d_, v, path);
    if (!text) return;
    const auto it = std::find(kTrunkingRemedies.begin(), kTrunkingRemedies.end(), *text);
    if (it == kTrunkingRemedies.end()) {
      d_.error(d_.pos(v), "'" + path + "' is '" + *text +
                              "'; use move-transport (keep NFSv4, move the NAS client's transport to this address), "
                              "nfsv3 (pin vers=3) or refuse (never apply a change that trunks)" +
                              did_you_mean(*text, kTrunkingRemedies));
      return;
    }
    const auto remedy = static_cast<TrunkingRemedy>(it - kTrunkingRemedies.begin());
    const auto version = out_.mount.nfs_version();
    const auto* proto = out_.mount.option("proto");
    switch (remedy) {
      case TrunkingRemedy::nfsv3:
        // The choice is the record of why vers=3 is there: whoever "upgrades" it meets this.
        if (!version || *version != "3") {
          d_.error(d_.pos(v), "'" + path + "' is nfsv3, but the mount " +
                                  (version ? "asks NFS " + *version : std::string("names no NFS version")) +
                                  ": add vers=3 to spec.mount.options, or use trunking: move-transport to keep "
                                  "NFSv4");
          return;
        }
        break;
      case TrunkingRemedy::move_transport:
        if (out_.mount.owner != MountOwner::fstab) {
          d_.error(d_.pos(v), "'" + path + "' is move-transport, but the mount is " +
                                  std::string(to_string(out_.mount.owner)) +
                                  "'s: the move lasts past a reboot only through the fstab, which pathwarden writes "
                                  "only for owner: fstab; use refuse, or pin vers=3 where the mount is made");
          return;
        }
        if (version && (*version == "3" || *version == "2" || *version == "4.0")) {
          d_.error(d_.pos(v), "'" + path + "' is move-transport, but NFS " + *version +
                                  " does not trunk (only NFSv4.1 and later do): leave out trunking");
          return;
        }
        if (proto != nullptr && proto->value && !proto->value->starts_with("tcp")) {
          d_.error(d_.pos(v), "'" + path + "' is move-transport, but the mount runs over proto=" + *proto->value +
                                  ": the kernel moves only TCP transports");
          return;
        }
        if (out_.mount.server.find(':') != std::string::npos) {
          d_.error(d_.pos(v), "'" + path + "' is move-transport, but the server " + out_.mount.server +
                                  " is an IPv6 address: the kernel's transport move (sunrpc dstaddr) takes IPv4 "
                                  "only, and an IPv6 address written there breaks the transport; use nfsv3 or refuse");
          return;
        }
        break;
      case TrunkingRemedy::refuse:
        break;
    }
    out_.mount.trunking = remedy;
  }

  // spec.mount.allow: the privileged options (kPrivilegedOptions) the policy may write.
  std::set<std::string, std::less<>> allow(const YAML::Node& v, const std::string& path) {
    std::set<std::string, std::less<>> out;
    std::vector<std::string_view> names;
    for (const auto& [name, _] : kPrivilegedOptions) names.push_back(name);
    if (!v.IsSequence()) {
      d_.error(d_.pos(v), "'" + path + "' must be a list of options among suid, dev and exec, got " + kind_of(v));
      return out;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      const YAML::Node item = v[i];
      auto text = read_string(d_, item, path + "[" + std::to_string(i) + "]");
      if (!text) continue;
      if (std::find(names.begin(), names.end(), *text) == names.end()) {
        d_.error(d_.pos(item), "'" + path + "[" + std::to_string(i) + "]' is '" + *text +
                                   "'; expected suid, dev or exec" + did_you_mean(*text, names));
      } else {
        out.insert(*text);
      }
    }
    return out;
  }

  void options(const YAML::Node& v, const std::string& path) {
    std::vector<WrittenOption> written;
    if (v.IsSequence()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        const YAML::Node item = v[i];
        if (auto text = read_string(d_, item, path + "[" + std::to_string(i) + "]")) {
          written.push_back({*text, d_.pos(item)});
        }
      }
    } else if (v.IsScalar()) {
      // "vers=3,nconnect=8": positions of the parts are exact for plain one-line scalars.
      const SourcePos base = d_.pos(v);
      const std::string& text = v.Scalar();
      std::size_t start = 0;
      while (start <= text.size()) {
        auto comma = text.find(',', start);
        std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        written.push_back({part, {base.file, base.line, base.column + static_cast<int>(start)}});
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      d_.error(d_.pos(v), "'" + path + "' must be a list like [vers=3, nconnect=8, _netdev], got " + kind_of(v));
      return;
    }
    for (const auto& w : written) option_pos_.try_emplace(w.text.substr(0, w.text.find('=')), w.pos);
    auto parsed = check_mount_options(written, out_.mount.server);
    for (auto& diag : parsed.diagnostics) d_.error(diag.pos, path + ": " + diag.message);
    out_.mount.options = std::move(parsed.options);
  }

  void verify(const Section& s) {
    if (!s.valid()) return;
    if (auto v = s.require("probe_file")) {
      remember(s, "probe_file");
      if (auto f = read_string(d_, *v, s.child("probe_file"))) {
        const std::string as_abs = "/" + *f;
        if (f->empty() || f->front() == '/' || path_problem(as_abs)) {
          d_.error(d_.pos(*v), "'spec.verify.probe_file' is '" + *f +
                                   "'; give a path relative to the mount path, without '.' or '..' parts");
        } else {
          out_.verify.probe_file = *f;
        }
      }
    }
    bool max_given = false;
    if (auto v = s.get("probe_bytes")) {
      remember(s, "probe_bytes");
      if (auto b = read_parsed(d_, *v, s.child("probe_bytes"), parse_byte_size)) {
        if (*b == 0) {
          d_.error(d_.pos(*v), "'spec.verify.probe_bytes' must be greater than 0");
        } else {
          out_.verify.probe_bytes = *b;
        }
      }
    }
    if (auto v = s.get("max_probe_bytes")) {
      remember(s, "max_probe_bytes");
      if (auto b = read_parsed(d_, *v, s.child("max_probe_bytes"), parse_byte_size)) {
        out_.verify.max_probe_bytes = *b;
        max_given = true;
        if (*b < out_.verify.probe_bytes) {
          d_.error(d_.pos(*v), "'spec.verify.max_probe_bytes' is smaller than 'probe_bytes'; the probe can only grow");
        }
      }
    }
    if (!max_given) {
      // Saturating: 4 x a probe above 4.6 EB would wrap around to less than the probe itself.
      constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
      const auto probe = out_.verify.probe_bytes;
      out_.verify.max_probe_bytes = probe <= kMax / 4 ? probe * 4 : kMax;
    }
    if (auto v = s.get("min_share")) {
      remember(s, "min_share");
      if (auto x = read_number(d_, *v, s.child("min_share"))) {
        if (*x <= 0.0 || *x > 1.0) {
          d_.error(d_.pos(*v), "'spec.verify.min_share' is " + v->Scalar() +
                                   "; it must be greater than 0 and at most 1 (e.g. 0.9 for 90%)");
        } else {
          out_.verify.min_share = *x;
        }
      }
    }
    if (auto v = s.get("direction")) {
      remember(s, "direction");
      if (auto dir = read_string(d_, *v, s.child("direction"))) {
        static constexpr std::array<std::string_view, 2> kDirs{"read", "write"};
        if (*dir == "read")
          out_.verify.direction = ProbeDirection::read;
        else if (*dir == "write")
          out_.verify.direction = ProbeDirection::write;
        else
          d_.error(d_.pos(*v),
                   "'spec.verify.direction' is '" + *dir + "'; use read or write" + did_you_mean(*dir, kDirs));
      }
    }
    if (auto v = s.get("probe_as")) {
      remember(s, "probe_as");
      if (auto who = read_string(d_, *v, s.child("probe_as"))) {
        static constexpr std::array<std::string_view, 2> kWho{"user", "root"};
        if (*who == "user")
          out_.verify.probe_as_root = false;
        else if (*who == "root")
          out_.verify.probe_as_root = true;
        else
          d_.error(d_.pos(*v), "'spec.verify.probe_as' is '" + *who + "'; use user (the SSH user) or root" +
                                   did_you_mean(*who, kWho));
      }
    }
    if (auto v = s.get("commit_cycles")) {
      remember(s, "commit_cycles");
      if (auto n = read_int(d_, *v, s.child("commit_cycles"), 1, kMaxCommitCycles)) {
        out_.verify.commit_cycles = static_cast<int>(*n);
      }
    }
    if (auto v = s.get("min_commit_rate")) {
      remember(s, "min_commit_rate");
      if (auto x = read_number(d_, *v, s.child("min_commit_rate"))) {
        if (*x <= 0.0) {
          d_.error(d_.pos(*v), "'spec.verify.min_commit_rate' is " + v->Scalar() +
                                   "; give the commits per second the path must reach (e.g. 1000)");
        } else {
          out_.verify.min_commit_rate = *x;
          if (out_.verify.commit_cycles == 0) out_.verify.commit_cycles = kDefaultCommitCycles;
        }
      }
    }
    if (auto v = s.get("baseline")) {
      remember(s, "baseline");
      if (auto ms = read_parsed(d_, *v, s.child("baseline"), parse_duration)) {
        if (ms->count() < 100 || ms->count() > 600'000) {
          d_.error(d_.pos(*v), "'spec.verify.baseline' must be between 100ms and 10m");
        } else {
          out_.verify.baseline = *ms;
        }
      }
    }
  }

  void restart(const Section& s) {
    if (!s.valid()) return;
    if (auto v = s.get("allowed")) {
      remember(s, "allowed");
      if (auto b = read_bool(d_, *v, s.child("allowed"))) out_.restart.allowed = *b;
    }
    if (auto v = s.get("window")) {
      remember(s, "window");
      if (auto w = read_parsed(d_, *v, s.child("window"), parse_time_window)) out_.restart.window = *w;
    }
  }

  void rollback(const Section& s) {
    if (!s.valid()) return;
    if (auto v = s.get("on_inconclusive")) {
      if (auto b = read_bool(d_, *v, s.child("on_inconclusive"))) out_.rollback.on_inconclusive = *b;
    }
    if (auto v = s.get("verify_restored")) {
      if (auto b = read_bool(d_, *v, s.child("verify_restored"))) out_.rollback.verify_restored = *b;
    }
  }

  std::map<std::string, SourcePos, std::less<>> option_pos_;  // where each option was written
  Decoder& d_;
  StoragePath& out_;
};

}  // namespace

std::vector<KeyTable> storage_path_key_tables() {
  return {{"", kDocumentKeys},
          {"metadata", kMetadataKeys},
          {"spec", kSpecKeys},
          {"spec.guest", kGuestKeys},
          {"spec.nic", kNicKeys},
          {"spec.mount", kMountKeys},
          {"spec.mount.compose", kComposeKeys},
          {"spec.verify", kVerifyKeys},
          {"spec.restart", kRestartKeys},
          {"spec.rollback", kRollbackKeys}};
}

std::vector<std::string_view> privileged_mount_options() {
  std::vector<std::string_view> out;
  for (const auto& [name, why] : kPrivilegedOptions) out.push_back(name);
  return out;
}

DocumentKind storage_path_kind(std::vector<StoragePath>& into) {
  return {"StoragePath", [&into](Decoder& d, const Section& top, const SourcePos& doc) {
            decode_document(d, doc, into, [&](StoragePath& p) { StoragePathDecoder(d, p).decode(top); });
          }};
}

}  // namespace pw::policy
