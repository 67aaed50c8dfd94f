// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The last line dd prints: "67108864 bytes (67 MB, 64 MiB) copied, 1.23 s, 54.6 MB/s".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pw::guest {

struct DdSummary {
  std::uint64_t bytes = 0;
  double seconds = 0;
};

std::optional<DdSummary> parse_dd_summary(std::string_view stderr_text);

// Why dd could not start: "dd: failed to open '/mnt/movies/probe-64m': No such file or directory"
// gives "No such file or directory". Nullopt when dd opened its files.
std::optional<std::string> dd_open_failure(std::string_view stderr_text);
// Whether dd could not open its output because the name was taken (conv=excl met EEXIST): the
// write probe never overwrites a file. Guest scripts run dd under LC_ALL=C, so the text is C's.
bool dd_output_existed(std::string_view stderr_text);

// dd's last complaint ("dd: error reading '...': Input/output error"), for a failed probe.
std::string dd_error_line(std::string_view stderr_text);

}  // namespace pw::guest
