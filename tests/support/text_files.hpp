// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small header-only helpers the unit tests share (no link dependency): a file's whole bytes, a
// checked-in sample of tests/guest/samples, how often a text occurs in another.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pw::testing {

// The file's bytes; throws (a failed test, not a crash) when it cannot be read.
inline std::string whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The file's bytes, or "" when there is no such file (a stand-in that was never called).
inline std::string whole_file_or_empty(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) ? whole_file(path) : std::string();
}

#ifdef PW_TEST_DATA_DIR
// A real kernel or tool output kept in tests/guest/samples (its README says where each is from).
inline std::string guest_sample(const std::string& name) {
  return whole_file(std::filesystem::path(PW_TEST_DATA_DIR) / "guest" / "samples" / name);
}
#endif

// Occurrences of `needle` in `haystack`, overlapping ones included.
inline std::size_t occurrences(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// Base64 as coreutils' base64 would print it on one line (what a guest script sends back).
inline std::string base64(std::string_view bytes) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const auto n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace pw::testing
