// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/model.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>

#include "diagnostics/suggest.hpp"
#include "policy/text.hpp"

namespace pw::policy {

std::optional<std::string> MountSpec::nfs_version() const {
  for (const char* key : {"vers", "nfsvers"}) {
    if (const auto* o = option(key); o && o->value) return o->value;
  }
  return std::nullopt;
}

std::optional<int> MountSpec::nconnect() const {
  const auto* o = option("nconnect");
  if (!o || !o->value) return std::nullopt;
  int n = 0;
  auto [p, ec] = std::from_chars(o->value->data(), o->value->data() + o->value->size(), n);
  if (ec != std::errc{} || p != o->value->data() + o->value->size()) return std::nullopt;
  return n;
}

const MountOption* MountSpec::option(std::string_view name) const {
  for (const auto& o : options) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string MountSpec::options_string() const {
  std::string out;
  for (const auto& o : options) {
    if (!out.empty()) out += ',';
    out += o.to_string();
  }
  return out;
}

std::string_view to_string(TrunkingRemedy remedy) {
  return kTrunkingRemedies[static_cast<std::size_t>(remedy)];
}

std::string_view to_string(MountOwner owner) {
  return kMountOwners[static_cast<std::size_t>(owner)];
}

bool is_docker_volume_path(std::string_view p) {
  if (p.starts_with("/var/lib/docker/")) return true;
  return p.find("/docker/volumes/") != std::string_view::npos &&
         (p.ends_with("/_data") || p.find("/_data/") != std::string_view::npos);
}

std::string MountSpec::display() const {
  if (!path.empty()) return path;
  if (compose) return "Compose volume " + compose->docker_name();
  return "(no path)";
}

namespace {

// Field names are few and live for the process: every policy points at the same strings.
const std::string& intern(std::string_view field) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> names;
  std::lock_guard lock(mutex);
  auto it = names.find(field);
  if (it == names.end()) it = names.emplace(field).first;
  return *it;
}

}  // namespace

void FieldPositions::set(std::string_view field, const SourcePos& pos) {
  auto file = std::find(files_.begin(), files_.end(), pos.file);
  if (file == files_.end()) file = files_.insert(files_.end(), pos.file);
  const Entry e{&intern(field), static_cast<std::uint32_t>(file - files_.begin()), pos.line, pos.column};
  auto it = std::lower_bound(entries_.begin(), entries_.end(), field,
                             [](const Entry& a, std::string_view f) { return *a.field < f; });
  if (it != entries_.end() && *it->field == field) {
    *it = e;
  } else {
    entries_.insert(it, e);
  }
}

SourcePos FieldPositions::at(std::size_t i) const {
  const auto& e = entries_[i];
  return {files_[e.file], e.line, e.column};
}

std::optional<SourcePos> FieldPositions::find(std::string_view field) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), field,
                             [](const Entry& a, std::string_view f) { return *a.field < f; });
  if (it == entries_.end() || *it->field != field) return std::nullopt;
  return at(static_cast<std::size_t>(it - entries_.begin()));
}

SourcePos StoragePath::position_of(std::string_view field) const {
  return positions.find(field).value_or(source);
}

namespace {

// Splits "123.5MiB" into the number and its unit.
std::pair<std::string_view, std::string_view> split_number(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  return {text.substr(0, i), trim_blanks(text.substr(i))};
}

std::optional<double> to_number(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

Result<std::uint64_t> parse_byte_size(std::string_view text) {
  struct Unit {
    std::string_view name;
    std::uint64_t factor;
  };
  static constexpr std::array<Unit, 11> units{{{"", 1},
                                               {"B", 1},
                                               {"KiB", 1ull << 10},
                                               {"MiB", 1ull << 20},
                                               {"GiB", 1ull << 30},
                                               {"TiB", 1ull << 40},
                                               {"kB", 1000},
                                               {"KB", 1000},
                                               {"MB", 1000ull * 1000},
                                               {"GB", 1000ull * 1000 * 1000},
                                               {"TB", 1000ull * 1000 * 1000 * 1000}}};
  const std::string_view trimmed = trim_blanks(text);
  auto [number, unit] = split_number(trimmed);
  const auto value = to_number(number);
  if (!value) {
    return fail("'" + std::string(text) + "' is not a size", {}, "write a number with a unit, e.g. 256MiB or 1GiB");
  }
  for (const auto& u : units) {
    if (u.name == unit) {
      const double bytes = *value * static_cast<double>(u.factor);
      if (bytes >= 18e18) return fail("size '" + std::string(text) + "' is too large");
      if (bytes != std::floor(bytes)) return fail("size '" + std::string(text) + "' is not a whole number of bytes");
      return static_cast<std::uint64_t>(bytes);
    }
  }
  std::array<std::string_view, units.size() - 1> names{};
  for (std::size_t i = 1; i < units.size(); ++i) names[i - 1] = units[i].name;
  return fail("unknown size unit '" + std::string(unit) + "'" + did_you_mean(unit, names), {},
              "use B, KiB, MiB, GiB, TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000)");
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  const std::string_view trimmed = trim_blanks(text);
  auto [number, unit] = split_number(trimmed);
  const auto value = to_number(number);
  if (!value) return fail("'" + std::string(text) + "' is not a duration", {}, "write e.g. 500ms, 30s, 5m or 1h");
  double factor = 0;
  if (unit == "ms")
    factor = 1;
  else if (unit == "s")
    factor = 1000;
  else if (unit == "m" || unit == "min")
    factor = 60'000;
  else if (unit == "h")
    factor = 3'600'000;
  else {
    static constexpr std::array<std::string_view, 5> names{"ms", "s", "m", "min", "h"};
    return fail("unknown duration unit '" + std::string(unit) + "'" + did_you_mean(unit, names), {},
                "write e.g. 500ms, 30s, 5m or 1h");
  }
  const double ms = *value * factor;
  if (ms > 1e12) return fail("duration '" + std::string(text) + "' is too long");
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

}  // namespace pw::policy
