// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The decoder of kind: StoragePath documents: every field checked against policies/README.md,
// and where each was written kept in StoragePath::positions for the messages of later stages.
#include <vector>

#include "policy/loader.hpp"

namespace pw::policy {

// Decoded policies without problems are appended to into.
DocumentKind storage_path_kind(std::vector<StoragePath>& into);

}  // namespace pw::policy
