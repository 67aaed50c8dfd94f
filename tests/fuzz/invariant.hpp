// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What every fuzz target uses to state its invariants. A broken invariant prints what was
// expected and aborts, which libFuzzer reports as a crash and saves the input as an artefact.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::fuzz {

[[noreturn]] inline void violated(const char* what, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "\n%s:%d: fuzz invariant violated: %s\n", file, line, what);
  if (!detail.empty()) std::fprintf(stderr, "  %s\n", detail.c_str());
  std::abort();
}

// Shows bytes with control characters escaped, for invariant messages.
inline std::string printable(std::string_view s, std::size_t max = 300) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

// An error a user gets to see must say what is wrong.
inline void check_error(const Error& e, const char* file, int line) {
  if (e.what.empty()) violated("an error without a message", file, line, e.to_string());
}

// A parser's refusal must say what is wrong and where (its `where` starts with where_prefix);
// returns whether the result holds a value.
template <class R>
bool accepted(const R& result, std::string_view where_prefix = {}) {
  if (result) return true;
  check_error(result.error(), __FILE__, __LINE__);
  if (!result.error().where.starts_with(where_prefix)) {
    violated("the error names where", __FILE__, __LINE__, result.error().to_string());
  }
  return false;
}

// Consumes the input as a sequence of length-prefixed pieces, for targets that need several
// inputs (a file plus edits); running out of bytes yields empty pieces.
class Pieces {
 public:
  Pieces(const std::uint8_t* data, std::size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return rest_.empty(); }
  std::uint8_t byte() {
    if (rest_.empty()) return 0;
    auto b = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  // Up to `max` bytes, the length taken from the next byte.
  std::string_view text(std::size_t max = 255) {
    const std::size_t n = std::min<std::size_t>(std::min<std::size_t>(byte(), max), rest_.size());
    auto out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return out;
  }
  // Everything up to the next occurrence of `separator` (consumed), or the rest.
  std::string_view until(std::string_view separator) {
    auto at = rest_.find(separator);
    auto out = rest_.substr(0, at);
    rest_.remove_prefix(at == std::string_view::npos ? rest_.size() : at + separator.size());
    return out;
  }
  std::string_view rest() {
    auto out = rest_;
    rest_ = {};
    return out;
  }

 private:
  std::string_view rest_;
};

}  // namespace pw::fuzz

#define PW_FUZZ_CHECK(cond, detail)                                         \
  do {                                                                      \
    if (!(cond)) ::pw::fuzz::violated(#cond, __FILE__, __LINE__, (detail)); \
  } while (false)

#define PW_FUZZ_CHECK_ERROR(err) ::pw::fuzz::check_error((err), __FILE__, __LINE__)

// Wraps a target body: an exception escaping a parser is a bug (errors are values here).
#define PW_FUZZ_TARGET(body_fn)                                                              \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {        \
    try {                                                                                    \
      body_fn(data, size);                                                                   \
    } catch (const std::exception& e) {                                                      \
      ::pw::fuzz::violated("no exception escapes", __FILE__, __LINE__, e.what());            \
    } catch (...) {                                                                          \
      ::pw::fuzz::violated("no exception escapes", __FILE__, __LINE__, "non-std exception"); \
    }                                                                                        \
    return 0;                                                                                \
  }
