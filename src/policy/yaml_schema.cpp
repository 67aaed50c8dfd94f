// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/yaml_schema.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "diagnostics/suggest.hpp"

namespace pw::policy::schema {
namespace {

std::string list(Keys keys) {
  std::string out;
  for (auto k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

}  // namespace

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "'" + (n.Scalar().size() > 40 ? n.Scalar().substr(0, 40) + "..." : n.Scalar()) + "'";
    default:
      return "an undefined value";
  }
}

SourcePos Decoder::pos(const YAML::Node& n, const SourcePos& fallback) const {
  const auto m = n.Mark();
  if (m.is_null()) return fallback.file.empty() ? SourcePos{file_, 1, 1} : fallback;
  return {file_, m.line + 1, m.column + 1};
}

void Decoder::error(const SourcePos& p, std::string message) {
  out_.push_back({p, pw::escape_controls(message)});
}

Section::Section(Decoder& d, const YAML::Node& node, std::string path, Keys allowed, const SourcePos& where)
    : d_(d), path_(std::move(path)), pos_(d.pos(node, where)) {
  if (!node.IsMap()) {
    if (node.IsNull()) {
      d_.error(pos_, "'" + path_ + "' is empty; expected a mapping with " + list(allowed));
    } else {
      // The whole document not a mapping: a file that is no policy at all (a token file, a key),
      // whose content must not end up in a diagnostic, a CI log or the journal.
      d_.error(pos_,
               "'" + path_ + "' must be a mapping, got " +
                   (path_ == "document" && node.IsScalar() ? std::string("a plain text (not shown)") : kind_of(node)) +
                   (path_ == "document" ? "; is this file a policy?" : ""));
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

std::optional<YAML::Node> Section::get(std::string_view key) const {
  auto it = fields_.find(std::string(key));
  if (it == fields_.end()) return std::nullopt;
  if (it->second.value.IsNull()) {
    d_.error(it->second.key_pos, "'" + child(key) + "' has no value");
    return std::nullopt;
  }
  return it->second.value;
}

std::optional<YAML::Node> Section::require(std::string_view key) const {
  if (!has(key)) {
    d_.error(pos_, "'" + path_ + "' is missing the required key '" + std::string(key) + "'");
    return std::nullopt;
  }
  return get(key);
}

SourcePos Section::value_pos(std::string_view key) const {
  auto it = fields_.find(std::string(key));
  if (it == fields_.end()) return pos_;
  return d_.pos(it->second.value, it->second.key_pos);
}

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
    d.error(d.pos(v),
            "'" + path + "' is " + s + "; it must be between " + std::to_string(lo) + " and " + std::to_string(hi));
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
  return !std::all_of(s.begin(), s.end(),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
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

}  // namespace pw::policy::schema
