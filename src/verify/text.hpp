// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Number formatting shared by the verifier's messages.
#include <cstdint>
#include <cstdio>
#include <string>

namespace pw::verify::text {

inline constexpr std::uint64_t kMiB = 1ull << 20;

// 67832136 → "67.8 MB": decimal units, as link speeds and the field reports use them.
inline std::string bytes(double b) {
  const char* unit[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  double v = b < 0 ? -b : b;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[48];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%s%.0f %s", b < 0 ? "-" : "", v, unit[u]);
  else
    std::snprintf(buf, sizeof buf, "%s%.1f %s", b < 0 ? "-" : "", v, unit[u]);
  return buf;
}

// Probe sizes are configured in binary units ("256MiB"): 67108864 → "64.0 MiB".
inline std::string binary_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, unit[u]);
  return buf;
}

inline std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

// N of a Proxmox NIC → "netN", as its config key and every report name it.
inline std::string net_name(int n) {
  return "net" + std::to_string(n);
}

inline std::string rate(double bytes_per_second) {
  return bytes(bytes_per_second) + "/s";
}

}  // namespace pw::verify::text
