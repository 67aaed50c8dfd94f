#include "policy/storage_path_decoder.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
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
constexpr std::array<std::string_view, 2> kNicKeys{"device", "queues"};
constexpr std::array<std::string_view, 6> kMountKeys{"server", "nas_addresses", "export", "path", "options", "reason"};
constexpr std::array<std::string_view, 6> kVerifyKeys{"probe_file", "probe_bytes", "max_probe_bytes",
                                                      "min_share",  "direction",   "baseline"};
constexpr std::array<std::string_view, 2> kRestartKeys{"allowed", "window"};
constexpr std::array<std::string_view, 2> kRollbackKeys{"on_inconclusive", "verify_restored"};
// Mount points a policy must never take over.
constexpr std::array<std::string_view, 14> kSystemPaths{"/",     "/bin",  "/boot", "/dev",  "/etc", "/lib", "/lib64",
                                                        "/proc", "/root", "/run",  "/sbin", "/sys", "/usr", "/var"};

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
    const auto direction = out_.positions.find("spec.verify.direction");
    if (out_.verify.direction == ProbeDirection::write && out_.mount.option("ro") && direction) {
      const auto options = out_.positions.find("spec.mount.options");
      d_.error(*direction, "'spec.verify.direction' is write, but the mount is read-only ('ro' in spec.mount.options" +
                               (options ? " at " + std::to_string(options->line) + ":" + std::to_string(options->column)
                                        : std::string()) +
                               "): a write probe cannot run there; use direction: read");
    }
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
  }

  void mount(const Section& s) {
    if (!s.valid()) return;
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
    if (auto v = s.require("path")) {
      remember(s, "path");
      if (auto p = read_abs_path(d_, *v, s.child("path"))) {
        if (std::find(kSystemPaths.begin(), kSystemPaths.end(), *p) != kSystemPaths.end()) {
          d_.error(d_.pos(*v), "'spec.mount.path' is '" + *p + "', a system directory; mount the share elsewhere");
        } else {
          out_.mount.path = *p;
        }
      }
    }
    if (auto v = s.get("reason")) {
      remember(s, "reason");
      if (auto r = read_string(d_, *v, s.child("reason"))) out_.mount.reason = *r;
    }
    if (auto v = s.get("options")) {
      remember(s, "options");
      options(*v, s.child("options"));
    }
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

  Decoder& d_;
  StoragePath& out_;
};

}  // namespace

DocumentKind storage_path_kind(std::vector<StoragePath>& into) {
  return {"StoragePath", [&into](Decoder& d, const Section& top, const SourcePos& doc) {
            decode_document(d, doc, into, [&](StoragePath& p) { StoragePathDecoder(d, p).decode(top); });
          }};
}

}  // namespace pw::policy
