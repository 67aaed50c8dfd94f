// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The decoder of kind: StoragePath documents: every field checked against policies/README.md,
// and where each was written kept in StoragePath::positions for the messages of later stages.
#include <vector>

#include "policy/loader.hpp"

namespace pw::policy {

// Decoded policies without problems are appended to into.
DocumentKind storage_path_kind(std::vector<StoragePath>& into);

// Every mapping of a StoragePath document and its keys (src/policy/policy.schema.json lists the
// same); and the options spec.mount.allow may name.
std::vector<KeyTable> storage_path_key_tables();
std::vector<std::string_view> privileged_mount_options();

}  // namespace pw::policy
