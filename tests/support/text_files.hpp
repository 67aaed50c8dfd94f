#pragma once
// Small header-only helpers the unit tests share (no link dependency): a file's whole bytes, a
// checked-in sample of tests/guest/samples, how often a text occurs in another.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pw::testing {

// The file's bytes; throws (a failed test, not a crash) when it cannot be read.
inline std::string whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
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

}  // namespace pw::testing
