// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/transport_move.hpp"

#include <arpa/inet.h>

#include <string>

#include "guest/change_script.hpp"
#include "guest/scripts.hpp"

namespace pw::guest {
namespace {

bool is_ipv4_address(const std::string& a) {
  in_addr out{};
  return inet_pton(AF_INET, a.c_str(), &out) == 1;
}

}  // namespace

std::string_view transport_move_script() {
  // POSIX sh (run by dash in tests/guest/transport_script_test.cpp against a sysfs tree of
  // files); its untouched exit is kTransportUntouchedExit, checked there against `untouched=`.
  static const std::string text = "set -u\n" + std::string(scripts::transport);
  return text;
}

Result<std::vector<std::string>> transport_move_argv(const TransportMove& m) {
  if (m.mount_point.empty() || m.mount_point.front() != '/')
    return fail("mount point '" + m.mount_point + "' is not absolute", m.host);
  for (const auto* a : {&m.from, &m.to}) {
    if (!is_ipv4_address(*a))
      return fail("'" + *a + "' is not an IPv4 address", m.host,
                  "the kernel moves an NFS transport to an IPv4 address only");
  }
  if (m.mounted_as.empty() || m.mounted_as.find_first_of(" \t\n:") != std::string::npos)
    return fail("'" + m.mounted_as + "' is not a server host", m.host);
  return std::vector<std::string>{m.mount_point, proc_mounts_escaped(m.mount_point), m.mounted_as, m.from,
                                  m.to,          m.restore ? "restore" : "move"};
}

}  // namespace pw::guest
