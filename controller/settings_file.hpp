// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Finding and loading the controller's own settings file.
#include <filesystem>

#include "cli.hpp"
#include "settings/model.hpp"

namespace pw::cli {

// --config, else $PATHWARDEN_CONFIG, else /etc/pathwarden/pathwarden.yaml.
std::filesystem::path settings_file(const GlobalOptions& globals);

Result<settings::ControllerSettings> load_settings(const GlobalOptions& globals);

// The policies directory named by the settings (already loaded: a run reads its settings file
// once), for commands run without a PATH.
Result<std::filesystem::path> default_policies_dir(const settings::ControllerSettings& loaded,
                                                   const GlobalOptions& globals);

}  // namespace pw::cli
