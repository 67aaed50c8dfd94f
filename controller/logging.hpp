#pragma once
#include <string>

#include "diagnostics/error.hpp"

namespace pw::cli {

// Logs go to stderr so that stdout stays for plans, reports and JSON output.
// format is "text" or "json" (one JSON object per line, for journald/Loki and AWX).
Status configure_logging(const std::string& level, const std::string& format);

}  // namespace pw::cli
