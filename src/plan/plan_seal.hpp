// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A plan file's seal: HMAC-SHA-256, under the controller's plan key (journal/plan_key.hpp), of the
// plan's JSON as written without the seal. `apply` refuses a plan whose seal is missing or does not
// match before it touches anything: a plan is reviewed as written, and an edit of any value (a
// backup path, a line added to the new fstab content with its hash left as it was, a netN string)
// is refused as a whole, naming the seal, rather than re-validated field by field. Plan format 1.4.
#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace pw::plan {

inline constexpr std::string_view kSealKey = "seal";

// Adds "seal": {"alg": "HMAC-SHA-256", "value": HEX} to the plan's JSON object.
void seal(boost::json::object& plan, std::string_view key);

// The plan as read from its file: its seal present and matching, or why not (`where`: the file).
Status check_seal(const boost::json::object& plan, std::string_view key, const std::string& where);

}  // namespace pw::plan
