// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads run reports back: a `--report-file` (format_version 3.x; 2.x with planned as strings; or
// format 1: "schema": "pathwarden-report/v1" with changes as strings too) or one policy's entry as
// the result store keeps it (any of them). The inverse of to_json; unknown keys are ignored so a newer minor's extra
// fields do not break this reader; an unknown major is refused, naming both versions.
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"
#include "report/run_report.hpp"

namespace pw::report {

// `where` names the source (a file); errors point into it: "FILE: policies[0].vmid: ...".
Result<RunReport> run_report_from_json(const boost::json::value& v, std::string_view where);
Result<PolicyReport> policy_report_from_json(const boost::json::value& v, std::string_view where);
// One policy entry's `verification` object (the result store keeps the last probe's).
Result<Verification> verification_from_json(const boost::json::value& v, std::string_view where);

// Parses JSON text, with the line and column of a syntax error ("FILE:3:17: ...").
Result<boost::json::value> parse_json_text(std::string_view text, std::string_view where);

}  // namespace pw::report
