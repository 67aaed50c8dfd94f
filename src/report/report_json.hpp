#pragma once
// Reads run reports back: a `--report-file` (schema pathwarden-report/v1) or one policy's entry
// as the result store keeps it. The inverse of to_json; unknown keys are ignored so a newer
// writer's extra fields do not break an older reader.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"
#include "report/run_report.hpp"

namespace pw::report {

// `where` names the source (a file); errors point into it: "FILE: policies[0].vmid: ...".
Result<RunReport> run_report_from_json(const boost::json::value& v, std::string_view where);
Result<PolicyReport> policy_report_from_json(const boost::json::value& v, std::string_view where);

// Parses JSON text, with the line and column of a syntax error ("FILE:3:17: ...").
Result<boost::json::value> parse_json_text(std::string_view text, std::string_view where);

}  // namespace pw::report
