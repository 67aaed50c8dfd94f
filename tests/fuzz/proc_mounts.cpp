// SPDX-License-Identifier: GPL-3.0-or-later
// /proc/mounts as a guest reports it. Accepted text is read consistently: printing the mounts
// back in the kernel's format (octal escapes) and reading them again gives the same mounts, and
// the derived views (server address, export, nconnect, NFS version) never fail.
#include <string>

#include "guest/fstab.hpp"
#include "guest/mounts.hpp"
#include "guest/tokens.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

std::string print(const std::vector<guest::MountInfo>& mounts) {
  std::string out;
  for (const auto& m : mounts) {
    std::string options;
    for (const auto& o : m.options) options += (options.empty() ? "" : ",") + o.name + (o.value ? "=" + *o.value : "");
    out += guest::encode_fstab_field(m.device) + " " + guest::encode_fstab_field(m.mount_point) + " " +
           guest::encode_fstab_field(m.fstype) + " " + guest::encode_fstab_field(options.empty() ? "rw" : options) +
           " 0 0\n";
  }
  return out;
}

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto mounts = guest::parse_proc_mounts(text, "fuzz");
  if (!fuzz::accepted(mounts, "fuzz:")) return;
  std::size_t nonblank = 0;
  for (auto line : guest::lines_of(text)) nonblank += guest::fields_of(line).empty() ? 0 : 1;
  PW_FUZZ_CHECK(mounts->size() == nonblank, "one mount per non-blank line");
  for (const auto& m : *mounts) {
    PW_FUZZ_CHECK(!m.device.empty() && !m.mount_point.empty() && !m.fstype.empty(), fuzz::printable(m.device));
    for (const auto& o : m.options) PW_FUZZ_CHECK(o.name.find_first_of(",=") == std::string::npos, o.name);
    (void)m.nfs_version();
    (void)m.nconnect();
    const auto host = m.device_host();
    const auto path = m.export_path();
    PW_FUZZ_CHECK(host.size() <= m.device.size() && path.size() <= m.device.size(), fuzz::printable(m.device));
    PW_FUZZ_CHECK(path.empty() || path.front() == '/', fuzz::printable(m.device) + " -> " + fuzz::printable(path));
    (void)m.server_address();
  }
  const auto printed = print(*mounts);
  auto again = guest::parse_proc_mounts(printed, "reprinted");
  PW_FUZZ_CHECK(again.has_value(), fuzz::printable(printed));
  PW_FUZZ_CHECK(again->size() == mounts->size(), fuzz::printable(printed));
  for (std::size_t i = 0; i < mounts->size(); ++i) {
    const auto& a = (*mounts)[i];
    const auto& b = (*again)[i];
    PW_FUZZ_CHECK(a.device == b.device && a.mount_point == b.mount_point && a.fstype == b.fstype &&
                      (a.options == b.options || a.options.empty()),
                  "mount " + std::to_string(i) + " of " + fuzz::printable(printed));
  }
  const std::vector<std::string> servers{"192.0.2.2", "198.51.100.2"};
  for (const auto& m : guest::nfs_mounts_of_server(*mounts, servers)) PW_FUZZ_CHECK(m.is_nfs(), m.fstype);
}

}  // namespace

PW_FUZZ_TARGET(one_input)
