// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An imported policy as the file an operator reviews and commits: yaml-cpp's emitter (every
// observed value is data, quoted where YAML needs it), with comments that say what was observed
// and what the operator decides (the reason, the probe file, the NIC's queues).
#include <string>

#include "importer/discover.hpp"

namespace pw::importer {

// `observed_at`: "2026-12-06T10:00:00Z", named in the header comment.
std::string policy_yaml(const ImportedPolicy& p, const std::string& observed_at);

}  // namespace pw::importer
