// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The YAML schema toolkit every pathwarden document decoder is built from: mappings whose keys are
// checked against a schema (unknown keys get a did-you-mean, duplicates the line of the first),
// typed field readers, and the diagnostics they report, each at the file:line:col of the value.
// Used by the StoragePath decoder here and by src/settings; depends on diagnostics and yaml-cpp.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::policy::schema {

using Keys = std::span<const std::string_view>;

// "a mapping", "a list", "nothing" or the scalar quoted (cut at 40 characters), for messages.
std::string kind_of(const YAML::Node& n);

// Where diagnostics go while one file is decoded.
class Decoder {
 public:
  Decoder(std::string file, Diagnostics& out) : file_(std::move(file)), out_(out) {}

  const std::string& file() const { return file_; }

  SourcePos pos(const YAML::Node& n, const SourcePos& fallback = {}) const;
  // Control characters quoted from the file are shown escaped: a diagnostic is one terminal line.
  void error(const SourcePos& p, std::string message);
  std::size_t error_count() const { return out_.size(); }

 private:
  std::string file_;
  Diagnostics& out_;
};

// One mapping of the document, its keys checked against the schema.
class Section {
 public:
  Section(Decoder& d, const YAML::Node& node, std::string path, Keys allowed, const SourcePos& where);

  bool valid() const { return valid_; }
  const SourcePos& pos() const { return pos_; }
  const std::string& path() const { return path_; }
  std::string child(std::string_view key) const { return path_ + "." + std::string(key); }

  // The value of a key, or nullopt when absent (a "key:" with no value counts as absent but is
  // reported, so users learn the key needs a value).
  std::optional<YAML::Node> get(std::string_view key) const;
  bool has(std::string_view key) const { return fields_.contains(std::string(key)); }
  std::optional<YAML::Node> require(std::string_view key) const;
  SourcePos value_pos(std::string_view key) const;

 private:
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
std::optional<std::string> read_string(Decoder& d, const YAML::Node& v, const std::string& path);
std::optional<std::int64_t> read_int(Decoder& d, const YAML::Node& v, const std::string& path, std::int64_t lo,
                                     std::int64_t hi);
std::optional<bool> read_bool(Decoder& d, const YAML::Node& v, const std::string& path);
std::optional<double> read_number(Decoder& d, const YAML::Node& v, const std::string& path);

// A string handed to parse (returning Result<T>), its error reported at the value.
template <class Parse>
auto read_parsed(Decoder& d, const YAML::Node& v, const std::string& path, Parse parse)
    -> std::optional<typename std::invoke_result_t<Parse, std::string_view>::value_type> {
  auto s = read_string(d, v, path);
  if (!s) return std::nullopt;
  auto r = parse(*s);
  if (!r) {
    d.error(d.pos(v),
            "'" + path + "': " + r.error().what + (r.error().hint.empty() ? "" : " (" + r.error().hint + ")"));
    return std::nullopt;
  }
  return *r;
}

// Decodes one document into a fresh T (its source where the document starts) with decode(T&),
// and keeps it in into only when no problem was reported meanwhile.
template <class T, class Decode>
void decode_document(Decoder& d, const SourcePos& doc, std::vector<T>& into, Decode decode) {
  T value;
  value.source = doc;
  const auto before = d.error_count();
  decode(value);
  if (d.error_count() == before) into.push_back(std::move(value));
}

// ---- value checks --------------------------------------------------------------------------

bool is_ip_address(const std::string& s);
// RFC 1123 host name; also what Proxmox accepts as a node name.
bool is_host_name(std::string_view s);
std::optional<std::string> read_address(Decoder& d, const YAML::Node& v, const std::string& path);

// Absolute, normalised path: what fstab and the mount table will show back to us. Returns what
// is wrong with p ("must not end with '/'"), or nullopt.
std::optional<std::string> path_problem(std::string_view p);
std::optional<std::string> read_abs_path(Decoder& d, const YAML::Node& v, const std::string& path);

}  // namespace pw::policy::schema
