// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads the controller settings (kind: Controller) with policy's file handling, and the files
// that may hold both kinds of document, as `pathwarden validate` and the policy directory do.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "policy/loader.hpp"
#include "settings/model.hpp"

namespace pw::settings {

// The kind: Controller document; settings decoded without problems are appended to into.
// Relative paths in it are resolved against the directory of the file.
policy::DocumentKind controller_kind(std::vector<ControllerSettings>& into);

// Every mapping of a Controller document and its keys (src/settings/settings.schema.json lists
// the same); and the inline secret keys among spec.proxmox's, accepted only to be refused with
// their own message (the schema marks them invalid).
std::vector<policy::KeyTable> controller_key_tables();
std::span<const std::string_view> inline_secret_keys();

// What policy::LoadResult holds, plus the controller settings found beside the policies.
struct LoadResult : policy::LoadResult {
  std::vector<ControllerSettings> controllers;
};

// policy::load_text and policy::load_paths reading kind: Controller documents as well.
LoadResult load_text(std::string_view text, const std::string& file_name);
LoadResult load_paths(std::span<const std::filesystem::path> inputs);

// Loads the controller settings file (exactly one kind: Controller document).
Result<ControllerSettings> load_controller_settings(const std::filesystem::path& file);

}  // namespace pw::settings
