#include "policy/loader.hpp"

#include <arpa/inet.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "diagnostics/suggest.hpp"
#include "policy/mount_options.hpp"

namespace pw::policy {
namespace {

constexpr std::string_view kApiVersion = "pathwarden/v1";

using Keys = std::span<const std::string_view>;

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "'" + (n.Scalar().size() > 40 ? n.Scalar().substr(0, 40) + "..." : n.Scalar()) + "'";
    default: return "an undefined value";
  }
}

// A diagnostic is one terminal line: control characters quoted from the file are shown escaped,
// so a file can neither forge other diagnostic lines nor send escape sequences to the terminal.
std::string escape_controls(std::string message) {
  std::string out;
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Where diagnostics go while one file is decoded.
class Decoder {
 public:
  Decoder(std::string file, Diagnostics& out) : file_(std::move(file)), out_(out) {}

  const std::string& file() const { return file_; }

  SourcePos pos(const YAML::Node& n, const SourcePos& fallback = {}) const {
    const auto m = n.Mark();
    if (m.is_null()) return fallback.file.empty() ? SourcePos{file_, 1, 1} : fallback;
    return {file_, m.line + 1, m.column + 1};
  }
  void error(const SourcePos& p, std::string message) { out_.push_back({p, escape_controls(std::move(message))}); }
  std::size_t error_count() const { return out_.size(); }

 private:
  std::string file_;
  Diagnostics& out_;
};

// One mapping of the document, its keys checked against the schema.
class Section {
 public:
  Section(Decoder& d, const YAML::Node& node, std::string path, Keys allowed, const SourcePos& where)
      : d_(d), path_(std::move(path)), pos_(d.pos(node, where)) {
    if (!node.IsMap()) {
      if (node.IsNull()) {
        d_.error(pos_, "'" + path_ + "' is empty; expected a mapping with " + list(allowed));
      } else {
        d_.error(pos_, "'" + path_ + "' must be a mapping, got " + kind_of(node));
      }
      valid_ = false;
      return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;  // a copy: it->first is a temporary proxy
      const SourcePos key_pos = d_.pos(key, pos_);
      if (!key.IsScalar()) {
        d_.error(key_pos, "keys in '" + path_ + "' must be plain names, got " + kind_of(key));
        continue;
      }
      const std::string& name = key.Scalar();
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        d_.error(key_pos, "unknown key '" + name + "' in '" + path_ + "'" + did_you_mean(name, allowed));
        continue;
      }
      if (auto prev = fields_.find(name); prev != fields_.end()) {
        d_.error(key_pos, "duplicate key '" + name + "' in '" + path_ + "' (first at line " +
                              std::to_string(prev->second.key_pos.line) + ")");
        continue;
      }
      fields_.emplace(name, Field{key_pos, YAML::Node(it->second)});
    }
  }

  bool valid() const { return valid_; }
  const SourcePos& pos() const { return pos_; }
  const std::string& path() const { return path_; }
  std::string child(std::string_view key) const { return path_ + "." + std::string(key); }

  // The value of a key, or nullopt when absent (a "key:" with no value counts as absent but is
  // reported, so users learn the key needs a value).
  std::optional<YAML::Node> get(std::string_view key) const {
    auto it = fields_.find(std::string(key));
    if (it == fields_.end()) return std::nullopt;
    if (it->second.value.IsNull()) {
      d_.error(it->second.key_pos, "'" + child(key) + "' has no value");
      return std::nullopt;
    }
    return it->second.value;
  }
  bool has(std::string_view key) const { return fields_.contains(std::string(key)); }

  std::optional<YAML::Node> require(std::string_view key) const {
    if (!has(key)) {
      d_.error(pos_, "'" + path_ + "' is missing the required key '" + std::string(key) + "'");
      return std::nullopt;
    }
    return get(key);
  }

  SourcePos value_pos(std::string_view key) const {
    auto it = fields_.find(std::string(key));
    if (it == fields_.end()) return pos_;
    return d_.pos(it->second.value, it->second.key_pos);
  }

 private:
  static std::string list(Keys keys) {
    std::string out;
    for (auto k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
    return out;
  }

  struct Field {
    SourcePos key_pos;
    YAML::Node value;
  };
  Decoder& d_;
  std::string path_;
  SourcePos pos_;
  bool valid_ = true;
  std::map<std::string, Field> fields_;
};

// Typed scalar readers: each reports its own problem and returns nullopt on failure.
std::optional<std::string> read_string(Decoder& d, const YAML::Node& v, const std::string& path) {
  if (!v.IsScalar()) {
    d.error(d.pos(v), "'" + path + "' must be a string, got " + kind_of(v));
    return std::nullopt;
  }
  for (char c : v.Scalar()) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      d.error(d.pos(v), "'" + path + "' contains a control character (newline or similar)");
      return std::nullopt;
    }
  }
  return v.Scalar();
}

std::optional<std::int64_t> read_int(Decoder& d, const YAML::Node& v, const std::string& path, std::int64_t lo,
                                     std::int64_t hi) {
  if (!v.IsScalar()) {
    d.error(d.pos(v), "'" + path + "' must be a whole number, got " + kind_of(v));
    return std::nullopt;
  }
  const std::string& s = v.Scalar();
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || p != s.data() + s.size()) {
    d.error(d.pos(v), "'" + path + "' must be a whole number, got " + kind_of(v));
    return std::nullopt;
  }
  if (n < lo || n > hi) {
    d.error(d.pos(v), "'" + path + "' is " + s + "; it must be between " + std::to_string(lo) + " and " +
                          std::to_string(hi));
    return std::nullopt;
  }
  return n;
}

std::optional<bool> read_bool(Decoder& d, const YAML::Node& v, const std::string& path) {
  if (v.IsScalar()) {
    if (v.Scalar() == "true") return true;
    if (v.Scalar() == "false") return false;
  }
  d.error(d.pos(v), "'" + path + "' must be true or false, got " + kind_of(v));
  return std::nullopt;
}

std::optional<double> read_number(Decoder& d, const YAML::Node& v, const std::string& path) {
  if (v.IsScalar()) {
    const std::string& s = v.Scalar();
    double x = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec == std::errc{} && p == s.data() + s.size() && std::isfinite(x)) return x;
  }
  d.error(d.pos(v), "'" + path + "' must be a number, got " + kind_of(v));
  return std::nullopt;
}

template <class Parse>
auto read_parsed(Decoder& d, const YAML::Node& v, const std::string& path, Parse parse)
    -> std::optional<typename std::invoke_result_t<Parse, std::string_view>::value_type> {
  auto s = read_string(d, v, path);
  if (!s) return std::nullopt;
  auto r = parse(*s);
  if (!r) {
    d.error(d.pos(v), "'" + path + "': " + r.error().what + (r.error().hint.empty() ? "" : " (" + r.error().hint + ")"));
    return std::nullopt;
  }
  return *r;
}

// ---- value checks --------------------------------------------------------------------------

bool is_ip_address(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// RFC 1123 host name; also what Proxmox accepts as a node name.
bool is_host_name(std::string_view s) {
  if (s.empty() || s.size() > 253 || s.back() == '.') return false;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto dot = s.find('.', start);
    auto label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  // All-numeric dotted names are malformed IPv4 addresses, not host names.
  return !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

std::optional<std::string> read_address(Decoder& d, const YAML::Node& v, const std::string& path) {
  auto s = read_string(d, v, path);
  if (!s) return std::nullopt;
  if (is_ip_address(*s) || is_host_name(*s)) return s;
  d.error(d.pos(v), "'" + path + "' is '" + *s + "', which is neither an IP address nor a host name");
  return std::nullopt;
}

// Absolute, normalised path: what fstab and the mount table will show back to us.
std::optional<std::string> path_problem(std::string_view p) {
  if (p.empty() || p.front() != '/') return "must be an absolute path (start with '/')";
  if (p.size() > 1 && p.back() == '/') return "must not end with '/'";
  if (p.find("//") != std::string_view::npos) return "must not contain '//'";
  std::size_t start = 1;
  while (start < p.size()) {
    auto slash = p.find('/', start);
    auto part = p.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part == "." || part == "..") return "must not contain '.' or '..' components";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  for (char c : p) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "must not contain control characters";
  }
  return std::nullopt;
}

std::optional<std::string> read_abs_path(Decoder& d, const YAML::Node& v, const std::string& path) {
  auto s = read_string(d, v, path);
  if (!s) return std::nullopt;
  if (auto problem = path_problem(*s)) {
    d.error(d.pos(v), "'" + path + "' is '" + *s + "'; it " + *problem);
    return std::nullopt;
  }
  return s;
}

bool is_object_name(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'; };
  return std::all_of(s.begin(), s.end(), ok) && std::isalnum(static_cast<unsigned char>(s.front())) &&
         std::isalnum(static_cast<unsigned char>(s.back()));
}

// ---- StoragePath ---------------------------------------------------------------------------

constexpr std::array<std::string_view, 4> kTopKeys{"apiVersion", "kind", "metadata", "spec"};
constexpr std::array<std::string_view, 3> kMetadataKeys{"name", "description", "labels"};
constexpr std::array<std::string_view, 6> kSpecKeys{"guest", "nic", "mount", "verify", "restart", "rollback"};
constexpr std::array<std::string_view, 3> kGuestKeys{"node", "vmid", "host"};
constexpr std::array<std::string_view, 2> kNicKeys{"device", "queues"};
constexpr std::array<std::string_view, 6> kMountKeys{"server", "nas_addresses", "export", "path", "options", "reason"};
constexpr std::array<std::string_view, 6> kVerifyKeys{"probe_file", "probe_bytes", "max_probe_bytes",
                                                      "min_share",  "direction",   "baseline"};
constexpr std::array<std::string_view, 2> kRestartKeys{"allowed", "window"};
constexpr std::array<std::string_view, 2> kRollbackKeys{"on_inconclusive", "verify_restored"};
// Mount points a policy must never take over.
constexpr std::array<std::string_view, 14> kSystemPaths{"/",    "/bin", "/boot", "/dev",  "/etc", "/lib", "/lib64",
                                                        "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var"};

class StoragePathDecoder {
 public:
  StoragePathDecoder(Decoder& d, StoragePath& out) : d_(d), out_(out) {}

  void decode(const Section& top) {
    if (auto md = top.require("metadata")) metadata(Section(d_, *md, "metadata", kMetadataKeys, top.value_pos("metadata")));
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
  }

 private:
  void remember(const Section& s, std::string_view key) { out_.positions[s.child(key)] = s.value_pos(key); }

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
          d_.error(d_.pos(*v), "'spec.guest.node' is '" + *node + "', which is not a Proxmox node name (a host name "
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
        if (host->empty() || host->front() == '-' ||
            std::any_of(host->begin(), host->end(), [](char c) { return c == ' ' || c == '\t' || c == ',' || c == ':'; })) {
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
            d_.error(d_.pos(item), "'" + path + "' is the mount's own server address; list only the NAS's other addresses");
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
        if (*dir == "read") out_.verify.direction = ProbeDirection::read;
        else if (*dir == "write") out_.verify.direction = ProbeDirection::write;
        else d_.error(d_.pos(*v), "'spec.verify.direction' is '" + *dir + "'; use read or write" + did_you_mean(*dir, kDirs));
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

// ---- Controller ----------------------------------------------------------------------------

constexpr std::array<std::string_view, 4> kControllerSpecKeys{"proxmox", "ansible", "state_dir", "policies"};
// The inline secret keys are accepted by the schema only so that they get their own message.
constexpr std::array<std::string_view, 16> kProxmoxKeys{
    "url",          "token_id", "token_secret_file", "token_secret_env",     "user",          "password_file",
    "password_env", "ca_file",  "fingerprint",       "insecure_skip_verify", "max_in_flight", "timeout",
    "token_secret", "password", "secret",            "token"};
constexpr std::array<std::string_view, 7> kAnsibleKeys{"inventory",        "playbook_command", "forks",      "timeout",
                                                       "private_key_file", "known_hosts_file", "remote_user"};
// Inline secrets are refused with a pointer to the file/env variants.
constexpr std::array<std::string_view, 4> kInlineSecretKeys{"token_secret", "password", "secret", "token"};

bool is_fingerprint(std::string_view s) {
  if (s.size() != 32 * 3 - 1) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i % 3 == 2 ? s[i] != ':' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

bool is_env_name(std::string_view s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s.front())) &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

class ControllerDecoder {
 public:
  ControllerDecoder(Decoder& d, ControllerSettings& out) : d_(d), out_(out) {
    base_ = std::filesystem::path(d.file()).parent_path();
  }

  void decode(const Section& top) {
    if (auto md = top.get("metadata")) Section(d_, *md, "metadata", kMetadataKeys, top.value_pos("metadata"));
    auto spec_node = top.require("spec");
    if (!spec_node) return;
    Section spec(d_, *spec_node, "spec", kControllerSpecKeys, top.value_pos("spec"));
    if (!spec.valid()) return;
    if (auto n = spec.require("proxmox")) proxmox(*n, spec.value_pos("proxmox"));
    if (auto n = spec.require("ansible")) ansible(*n, spec.value_pos("ansible"));
    if (auto v = spec.get("state_dir")) {
      if (auto p = read_string(d_, *v, "spec.state_dir")) out_.state_dir = resolve(*p);
    }
    if (auto v = spec.get("policies")) {
      if (auto p = read_string(d_, *v, "spec.policies")) out_.policies_dir = resolve(*p);
    }
  }

 private:
  std::string resolve(const std::string& p) const {
    if (p.empty() || p.front() == '/' || base_.empty()) return p;
    return (base_ / p).lexically_normal().string();
  }

  std::string file_field(const Section& s, std::string_view key) {
    if (auto v = s.get(key)) {
      if (auto p = read_string(d_, *v, s.child(key))) return resolve(*p);
    }
    return {};
  }

  std::string env_field(const Section& s, std::string_view key) {
    if (auto v = s.get(key)) {
      if (auto p = read_string(d_, *v, s.child(key))) {
        if (is_env_name(*p)) return *p;
        d_.error(d_.pos(*v), "'" + s.child(key) + "' must name an environment variable, like PATHWARDEN_TOKEN");
      }
    }
    return {};
  }

  void reject_inline_secrets(const YAML::Node& node, const std::string& path) {
    if (!node.IsMap()) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const auto& key = it->first.Scalar();
      if (std::find(kInlineSecretKeys.begin(), kInlineSecretKeys.end(), key) != kInlineSecretKeys.end()) {
        d_.error(d_.pos(it->first), "'" + path + "." + key +
                                        "': secrets are not accepted inline (policy files live in git); use " +
                                        (key == "password" ? "password_file or password_env"
                                                           : "token_secret_file or token_secret_env"));
      }
    }
  }

  void proxmox(const YAML::Node& node, const SourcePos& where) {
    reject_inline_secrets(node, "spec.proxmox");
    Section s(d_, node, "spec.proxmox", kProxmoxKeys, where);
    if (!s.valid()) return;
    auto& p = out_.proxmox;
    if (auto v = s.require("url")) {
      if (auto url = read_string(d_, *v, "spec.proxmox.url")) {
        if (url->starts_with("http://")) {
          d_.error(d_.pos(*v), "'spec.proxmox.url' uses plain http, which would send the API token in clear; use https://");
        } else if (!url->starts_with("https://") || url->size() <= 8) {
          d_.error(d_.pos(*v), "'spec.proxmox.url' is '" + *url + "'; write it like https://pve1.example.org:8006");
        } else {
          p.url = *url;
        }
      }
    }
    if (auto v = s.get("token_id")) {
      if (auto id = read_string(d_, *v, "spec.proxmox.token_id")) {
        const auto at = id->find('@');
        const auto bang = id->find('!');
        if (at == std::string::npos || bang == std::string::npos || bang < at || at == 0 || bang + 1 == id->size()) {
          d_.error(d_.pos(*v), "'spec.proxmox.token_id' is '" + *id + "'; write it as USER@REALM!TOKENNAME");
        } else {
          p.token_id = *id;
        }
      }
    }
    p.token_secret_file = file_field(s, "token_secret_file");
    p.token_secret_env = env_field(s, "token_secret_env");
    if (auto v = s.get("user")) {
      if (auto u = read_string(d_, *v, "spec.proxmox.user")) {
        if (u->find('@') == std::string::npos) {
          d_.error(d_.pos(*v), "'spec.proxmox.user' is '" + *u + "'; write it as USER@REALM, e.g. pathwarden@pve");
        } else {
          p.user = *u;
        }
      }
    }
    p.password_file = file_field(s, "password_file");
    p.password_env = env_field(s, "password_env");
    p.ca_file = file_field(s, "ca_file");
    if (auto v = s.get("fingerprint")) {
      if (auto f = read_string(d_, *v, "spec.proxmox.fingerprint")) {
        if (is_fingerprint(*f)) {
          p.fingerprint = *f;
        } else {
          d_.error(d_.pos(*v), "'spec.proxmox.fingerprint' must be a SHA-256 fingerprint in colon-hex "
                               "(32 pairs like AB:CD:...), as 'pvenode cert info' prints it");
        }
      }
    }
    if (auto v = s.get("insecure_skip_verify")) {
      if (auto b = read_bool(d_, *v, "spec.proxmox.insecure_skip_verify")) p.insecure_skip_verify = *b;
    }
    if (auto v = s.get("max_in_flight")) {
      if (auto n = read_int(d_, *v, "spec.proxmox.max_in_flight", 1, 256)) p.max_in_flight = static_cast<int>(*n);
    }
    if (auto v = s.get("timeout")) {
      if (auto ms = read_parsed(d_, *v, "spec.proxmox.timeout", parse_duration)) p.timeout = *ms;
    }
    const bool token = s.has("token_id");
    const bool ticket = s.has("user");
    if (token && ticket) {
      d_.error(s.pos(), "'spec.proxmox' sets both token_id and user; choose API token or ticket authentication");
    } else if (!token && !ticket) {
      d_.error(s.pos(), "'spec.proxmox' needs token_id (API token, recommended) or user (ticket authentication)");
    }
    if (token && s.has("token_secret_file") == s.has("token_secret_env")) {
      d_.error(s.pos(), "'spec.proxmox' needs exactly one of token_secret_file and token_secret_env");
    }
    if (ticket && s.has("password_file") == s.has("password_env")) {
      d_.error(s.pos(), "'spec.proxmox' needs exactly one of password_file and password_env");
    }
    if (p.insecure_skip_verify && (s.has("ca_file") || s.has("fingerprint"))) {
      d_.error(s.value_pos("insecure_skip_verify"),
               "'spec.proxmox.insecure_skip_verify' contradicts ca_file/fingerprint; remove it to keep verification on");
    }
  }

  void ansible(const YAML::Node& node, const SourcePos& where) {
    Section s(d_, node, "spec.ansible", kAnsibleKeys, where);
    if (!s.valid()) return;
    auto& a = out_.ansible;
    if (s.require("inventory")) a.inventory = file_field(s, "inventory");
    if (auto v = s.get("playbook_command")) {
      if (auto c = read_string(d_, *v, "spec.ansible.playbook_command")) a.playbook_command = *c;
    }
    if (auto v = s.get("forks")) {
      if (auto n = read_int(d_, *v, "spec.ansible.forks", 1, 1000)) a.forks = static_cast<int>(*n);
    }
    if (auto v = s.get("timeout")) {
      if (auto ms = read_parsed(d_, *v, "spec.ansible.timeout", parse_duration)) a.timeout = *ms;
    }
    a.private_key_file = file_field(s, "private_key_file");
    a.known_hosts_file = file_field(s, "known_hosts_file");
    if (auto v = s.get("remote_user")) {
      if (auto u = read_string(d_, *v, "spec.ansible.remote_user")) a.remote_user = *u;
    }
  }

  Decoder& d_;
  ControllerSettings& out_;
  std::filesystem::path base_;
};

// ---- files ---------------------------------------------------------------------------------

// Policy files are text: NUL bytes or invalid UTF-8 mean a wrong file, not a policy.
std::optional<Diagnostic> binary_problem(std::string_view text, const std::string& file) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = 1;
    if (c == 0) return Diagnostic{{file, line, col}, "not a text file (NUL byte); policy files are UTF-8 YAML"};
    if (c >= 0x80) {
      len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
      bool ok = len != 0 && i + len <= text.size();
      for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
      if (!ok) return Diagnostic{{file, line, col}, "not a text file (invalid UTF-8); policy files are UTF-8 YAML"};
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
  return std::nullopt;
}

// yaml-cpp 0.7 (Debian bookworm) loops forever in LoadAll on some malformed streams, e.g. a
// leading ',' (jbeder/yaml-cpp#1040, fixed upstream by #1318/#1319): the parser hands out the same
// empty document again and again without consuming a token. This event pass stops at the first
// document that starts where the previous one started and reports it as a syntax error.
class ProgressCheck final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  // Throws YAML::ParserException where the stream stops making progress.
  static void run(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    ProgressCheck check;
    std::optional<int> previous;
    while (parser.HandleNextDocument(check)) {
      if (previous && *previous == check.start_.pos) {
        throw YAML::ParserException(check.start_, "unexpected character where a document should start");
      }
      previous = check.start_.pos;
    }
  }

 private:
  YAML::Mark start_ = YAML::Mark::null_mark();
};

}  // namespace

LoadResult load_text(std::string_view text, const std::string& file_name) {
  LoadResult result;
  auto& diags = result.diagnostics;
  if (text.size() > kMaxPolicyFileBytes) {
    diags.push_back({{file_name, 0, 0},
                     "file is larger than " + std::to_string(kMaxPolicyFileBytes >> 10) +
                         " KiB; policy files are small YAML documents (is this the right file?)"});
    return result;
  }
  if (auto problem = binary_problem(text, file_name)) {
    diags.push_back(*problem);
    return result;
  }
  std::vector<YAML::Node> docs;
  try {
    const std::string owned(text);
    ProgressCheck::run(owned);
    docs = YAML::LoadAll(owned);
  } catch (const YAML::Exception& e) {
    // yaml-cpp also throws for nesting deeper than its guard allows; it is a syntax error to us.
    const int line = e.mark.is_null() ? 1 : e.mark.line + 1;
    const int col = e.mark.is_null() ? 1 : e.mark.column + 1;
    diags.push_back({{file_name, line, col}, "YAML syntax error: " + e.msg});
    return result;
  }
  std::size_t real_docs = 0;
  for (const auto& doc : docs) {
    if (doc.IsNull()) continue;
    ++real_docs;
    Decoder d(file_name, diags);
    const SourcePos doc_pos = d.pos(doc);
    Section top(d, doc, "document", kTopKeys, doc_pos);
    if (!top.valid()) continue;
    auto api = top.require("apiVersion");
    if (api) {
      if (auto v = read_string(d, *api, "apiVersion"); v && *v != kApiVersion) {
        d.error(top.value_pos("apiVersion"),
                "unsupported apiVersion '" + *v + "'; this pathwarden reads '" + std::string(kApiVersion) + "'");
      }
    }
    auto kind_node = top.require("kind");
    if (!kind_node) continue;
    auto kind = read_string(d, *kind_node, "kind");
    if (!kind) continue;
    if (*kind == "StoragePath") {
      StoragePath p;
      p.source = doc_pos;
      const auto before = d.error_count();
      StoragePathDecoder(d, p).decode(top);
      if (d.error_count() == before) result.paths.push_back(std::move(p));
    } else if (*kind == "Controller") {
      ControllerSettings c;
      c.source = doc_pos;
      const auto before = d.error_count();
      ControllerDecoder(d, c).decode(top);
      if (d.error_count() == before) result.controllers.push_back(std::move(c));
    } else {
      static constexpr std::array<std::string_view, 2> kKinds{"StoragePath", "Controller"};
      d.error(top.value_pos("kind"),
              "unknown kind '" + *kind + "'; expected StoragePath or Controller" + did_you_mean(*kind, kKinds));
    }
  }
  if (real_docs == 0) {
    diags.push_back({{file_name, 1, 1}, "file holds no document; expected a StoragePath or Controller document"});
  }
  return result;
}

namespace {

void load_file(const std::filesystem::path& file, LoadResult& into) {
  const std::string name = file.string();
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    into.diagnostics.push_back({{name, 0, 0}, "cannot read file: " + std::string(std::strerror(errno))});
    return;
  }
  // Read at most one byte past the limit: a 50 MB file is refused without being read whole.
  std::string text(kMaxPolicyFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  auto r = load_text(text, name);
  std::move(r.paths.begin(), r.paths.end(), std::back_inserter(into.paths));
  std::move(r.controllers.begin(), r.controllers.end(), std::back_inserter(into.controllers));
  std::move(r.diagnostics.begin(), r.diagnostics.end(), std::back_inserter(into.diagnostics));
}

bool is_policy_file(const std::filesystem::path& p) {
  const auto ext = p.extension();
  return ext == ".yaml" || ext == ".yml";
}

}  // namespace

LoadResult load_paths(std::span<const std::filesystem::path> inputs) {
  LoadResult result;
  for (const auto& input : inputs) {
    std::error_code ec;
    const auto status = std::filesystem::status(input, ec);
    if (ec || !std::filesystem::exists(status)) {
      result.diagnostics.push_back({{input.string(), 0, 0}, "no such file or directory"});
      continue;
    }
    if (!std::filesystem::is_directory(status)) {
      load_file(input, result);
      continue;
    }
    std::vector<std::filesystem::path> files;
    std::filesystem::recursive_directory_iterator it(input, std::filesystem::directory_options::skip_permission_denied, ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      const auto& p = it->path();
      if (p.filename().string().starts_with(".")) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file() && is_policy_file(p)) files.push_back(p);
    }
    if (ec) result.diagnostics.push_back({{input.string(), 0, 0}, "cannot list directory: " + ec.message()});
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      result.diagnostics.push_back({{input.string(), 0, 0}, "directory holds no *.yaml or *.yml policy file"});
    }
    for (const auto& f : files) load_file(f, result);
  }
  auto cross = check_policy_set(result.paths);
  std::move(cross.begin(), cross.end(), std::back_inserter(result.diagnostics));
  return result;
}

Diagnostics check_policy_set(std::span<const StoragePath> paths) {
  Diagnostics out;
  std::map<std::string, const StoragePath*> by_name;
  std::map<std::pair<int, std::string>, const StoragePath*> by_mount;
  std::map<std::pair<int, std::string>, const StoragePath*> by_nic;
  std::map<std::string, const StoragePath*> by_host;
  std::map<int, const StoragePath*> by_vmid;
  auto at = [](const StoragePath& p, std::string_view field) { return p.position_of(field).to_string(); };
  for (const auto& p : paths) {
    if (auto [it, fresh] = by_name.emplace(p.name, &p); !fresh) {
      out.push_back({p.position_of("metadata.name"),
                     "policy name '" + p.name + "' is already used at " + at(*it->second, "metadata.name")});
    }
    if (auto [it, fresh] = by_mount.emplace(std::pair{p.guest.vmid, p.mount.path}, &p); !fresh) {
      out.push_back({p.position_of("spec.mount.path"),
                     "mount path " + p.mount.path + " of VM " + std::to_string(p.guest.vmid) +
                         " is already claimed by policy '" + it->second->name + "' at " +
                         at(*it->second, "spec.mount.path") + "; one policy per guest mount"});
    }
    if (p.nic.queues) {
      auto [it, fresh] = by_nic.emplace(std::pair{p.guest.vmid, p.nic.device}, &p);
      if (!fresh && it->second->nic.queues != p.nic.queues) {
        out.push_back({p.position_of("spec.nic.queues"),
                       "VM " + std::to_string(p.guest.vmid) + " " + p.nic.device + " wants queues=" +
                           std::to_string(*p.nic.queues) + " here but queues=" +
                           std::to_string(*it->second->nic.queues) + " in policy '" + it->second->name + "' at " +
                           at(*it->second, "spec.nic.queues") + "; a NIC has one queue count"});
      }
    }
    if (auto [it, fresh] = by_host.emplace(p.guest.host, &p); !fresh && it->second->guest.vmid != p.guest.vmid) {
      out.push_back({p.position_of("spec.guest.host"),
                     "host '" + p.guest.host + "' is VM " + std::to_string(it->second->guest.vmid) + " in policy '" +
                         it->second->name + "' at " + at(*it->second, "spec.guest.vmid") + " but VM " +
                         std::to_string(p.guest.vmid) + " here"});
    }
    if (auto [it, fresh] = by_vmid.emplace(p.guest.vmid, &p); !fresh && it->second->guest.node != p.guest.node) {
      out.push_back({p.position_of("spec.guest.node"),
                     "VM " + std::to_string(p.guest.vmid) + " is on node '" + it->second->guest.node + "' in policy '" +
                         it->second->name + "' at " + at(*it->second, "spec.guest.node") + " but on '" +
                         p.guest.node + "' here; a VM id is unique in a cluster"});
    }
  }
  return out;
}

Result<ControllerSettings> load_controller_settings(const std::filesystem::path& file) {
  std::array<std::filesystem::path, 1> inputs{file};
  auto r = load_paths(inputs);
  if (!r.diagnostics.empty()) {
    Error e{r.diagnostics.front().message, r.diagnostics.front().pos.to_string(), {}};
    if (r.diagnostics.size() > 1) {
      e.hint = std::to_string(r.diagnostics.size() - 1) + " more problem(s); run 'pathwarden validate " +
               file.string() + "' to see all";
    }
    return std::unexpected(e);
  }
  if (r.controllers.size() != 1 || !r.paths.empty()) {
    return fail("expected exactly one 'kind: Controller' document", file.string(),
                "controller settings live in their own file, apart from policies");
  }
  return r.controllers.front();
}

}  // namespace pw::policy
