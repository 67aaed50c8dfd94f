// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The reliability tests' cases and outcomes, for tests/reliability/README.md: each test appends
// one JSON line {"area","case","outcome"} per case to $PW_RELIABILITY_RESULTS/<file>.jsonl when
// that variable is set (tests/reliability/run-report sets it and rewrites the README's table).
#include <string>

namespace pw::reliability {

void record_case(const std::string& file, const std::string& area, const std::string& name, const std::string& outcome);

}  // namespace pw::reliability
