// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/dd_summary.hpp"

#include <charconv>
#include <cmath>

#include "guest/tokens.hpp"

namespace pw::guest {

std::optional<DdSummary> parse_dd_summary(std::string_view stderr_text) {
  std::optional<DdSummary> found;
  for (auto line : lines_of(stderr_text)) {
    auto f = fields_of(line);
    if (f.size() < 2 || f[1] != "bytes") continue;
    auto bytes = to_uint64(f[0]);
    auto copied = line.find("copied, ");
    if (!bytes || copied == std::string_view::npos) continue;
    auto rest = line.substr(copied + 8);
    double seconds = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), seconds);
    // from_chars also reads "-1", "nan" and "inf": none is a duration the verifier can divide by.
    if (ec != std::errc{} || !std::isfinite(seconds) || seconds < 0) continue;
    found = DdSummary{*bytes, seconds};
  }
  return found;
}

std::optional<std::string> dd_open_failure(std::string_view stderr_text) {
  for (auto line : lines_of(stderr_text)) {
    // GNU coreutils: "failed to open %s"; busybox dd: "can't open '%s': %s".
    if (line.find("failed to open") == std::string_view::npos && line.find("can't open") == std::string_view::npos)
      continue;
    const auto colon = line.rfind(": ");
    return std::string(colon == std::string_view::npos ? line : line.substr(colon + 2));
  }
  return std::nullopt;
}

bool dd_output_existed(std::string_view stderr_text) {
  const auto why = dd_open_failure(stderr_text);
  return why && *why == "File exists";
}

std::string dd_error_line(std::string_view stderr_text) {
  std::string_view last;
  for (auto line : lines_of(stderr_text))
    if (line.starts_with("dd:")) last = line;
  return std::string(trim(last));
}

}  // namespace pw::guest
