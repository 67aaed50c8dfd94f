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

}  // namespace pw::guest
