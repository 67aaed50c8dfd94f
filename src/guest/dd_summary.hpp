#pragma once
// The last line dd prints: "67108864 bytes (67 MB, 64 MiB) copied, 1.23 s, 54.6 MB/s".
#include <cstdint>
#include <optional>
#include <string_view>

namespace pw::guest {

struct DdSummary {
  std::uint64_t bytes = 0;
  double seconds = 0;
};

std::optional<DdSummary> parse_dd_summary(std::string_view stderr_text);

}  // namespace pw::guest
