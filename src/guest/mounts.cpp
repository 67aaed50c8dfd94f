// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/mounts.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "guest/tokens.hpp"

namespace pw::guest {

std::vector<MountOption> split_mount_options(std::string_view options) {
  std::vector<MountOption> out;
  while (!options.empty()) {
    auto comma = options.find(',');
    auto item = options.substr(0, comma);
    if (!item.empty()) {
      auto eq = item.find('=');
      if (eq == std::string_view::npos) {
        out.push_back({std::string(item), std::nullopt});
      } else {
        out.push_back({std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))});
      }
    }
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<std::string> MountInfo::option(std::string_view name) const {
  for (const auto& o : options) {
    if (o.name == name) return o.value.value_or("");
  }
  return std::nullopt;
}

bool MountInfo::has_option(std::string_view name) const {
  return option(name).has_value();
}

bool MountInfo::is_nfs() const {
  return fstype == "nfs" || fstype == "nfs4";
}

std::string MountInfo::nfs_version() const {
  if (auto v = option("vers")) return *v;
  if (auto v = option("nfsvers")) return *v;
  return {};
}

int MountInfo::nconnect() const {
  auto v = option("nconnect");
  if (!v) return 1;
  return to_int(*v).value_or(1);
}

std::string MountInfo::device_host() const {
  std::string_view d = device;
  if (d.starts_with('[')) {
    auto close = d.find(']');
    if (close != std::string_view::npos) return std::string(d.substr(1, close - 1));
  }
  auto colon = d.find(":/");
  if (colon == std::string_view::npos) return {};
  return std::string(d.substr(0, colon));
}

std::string MountInfo::export_path() const {
  std::string_view d = device;
  auto start = d.starts_with('[') ? d.find("]:/") : std::string_view::npos;
  auto colon = start != std::string_view::npos ? start + 1 : d.find(":/");
  if (colon == std::string_view::npos) return {};
  return std::string(d.substr(colon + 1));
}

std::string MountInfo::server_address() const {
  if (auto addr = option("addr"); addr && !addr->empty()) return *addr;
  return device_host();
}

Result<std::vector<MountInfo>> parse_proc_mounts(std::string_view text, std::string_view where) {
  std::vector<MountInfo> mounts;
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    auto fields = fields_of(line);
    if (fields.empty()) continue;
    if (fields.size() < 4) {
      return fail("mount line has " + std::to_string(fields.size()) + " fields, expected 6",
                  std::string(where) + ":" + std::to_string(line_no) + ":1",
                  "the guest's /proc/mounts looks truncated; gather facts again");
    }
    MountInfo m;
    m.device = decode_octal_escapes(fields[0]);
    m.mount_point = decode_octal_escapes(fields[1]);
    m.fstype = decode_octal_escapes(fields[2]);
    m.options = split_mount_options(decode_octal_escapes(fields[3]));
    mounts.push_back(std::move(m));
  }
  return mounts;
}

std::string_view to_string(MountAnswer answer) {
  switch (answer) {
    case MountAnswer::unknown:
      return "unknown";
    case MountAnswer::answers:
      return "ok";
    case MountAnswer::stale:
      return "stale";
    case MountAnswer::no_answer:
      return "no-answer";
    case MountAnswer::error:
      return "error";
  }
  return "unknown";
}

Status apply_statfs_answers(std::string_view text, std::vector<MountInfo>& mounts, std::string_view where) {
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    auto fields = fields_of(line);
    if (fields.empty()) continue;
    static const std::array<std::pair<std::string_view, MountAnswer>, 4> kWords{{{"ok", MountAnswer::answers},
                                                                                 {"stale", MountAnswer::stale},
                                                                                 {"no-answer", MountAnswer::no_answer},
                                                                                 {"error", MountAnswer::error}}};
    const auto* word = std::find_if(kWords.begin(), kWords.end(), [&](const auto& w) { return w.first == fields[0]; });
    if (word == kWords.end() || fields.size() < 2) {
      return fail("statfs line '" + std::string(line) + "' is not 'ok|stale|no-answer|error MOUNT'",
                  std::string(where) + ":" + std::to_string(line_no) + ":1",
                  "the guest's facts report looks truncated or comes from another pathwarden; gather facts again");
    }
    const std::string point = decode_octal_escapes(fields[1]);
    auto in_effect =
        std::find_if(mounts.rbegin(), mounts.rend(), [&](const MountInfo& m) { return m.mount_point == point; });
    if (in_effect == mounts.rend()) continue;
    in_effect->answer = word->second;
    if (word->second == MountAnswer::error) {
      // The message is the rest of the line after the mount point's field.
      const auto at = line.find(fields[1], fields[0].size());
      in_effect->answer_error = std::string(trim(line.substr(at + fields[1].size())));
    }
  }
  return {};
}

std::vector<MountInfo> nfs_mounts_of_server(const std::vector<MountInfo>& mounts,
                                            std::span<const std::string> server_addresses) {
  auto known = [&](const std::string& address) {
    return std::find(server_addresses.begin(), server_addresses.end(), address) != server_addresses.end();
  };
  std::vector<MountInfo> out;
  for (const auto& m : mounts) {
    if (m.is_nfs() && (known(m.server_address()) || known(m.device_host()))) out.push_back(m);
  }
  return out;
}

}  // namespace pw::guest
