// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The playbooks of a whole plan, for review (`plan --emit-playbooks`, playbooks/generated/):
// made by the same generators with the same options as the runs, so what is read is what runs.
#include <vector>

#include "ansible/playbooks.hpp"
#include "guest/operations.hpp"

namespace pw::ansible {

// facts, apply, rollback, channels, channels-rollback, probe: those the requests need.
Result<std::vector<Playbook>> review_playbooks(const guest::RequestSet& requests, const PlaybookOptions& options);

}  // namespace pw::ansible
