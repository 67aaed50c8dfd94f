// SPDX-License-Identifier: GPL-3.0-or-later
#include "settings_file.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "settings/loader.hpp"

namespace pw::cli {

std::filesystem::path settings_file(const GlobalOptions& globals) {
  if (globals.config_file) return *globals.config_file;
  if (const char* env = std::getenv("PATHWARDEN_CONFIG"); env != nullptr && *env != '\0') return env;
  return "/etc/pathwarden/pathwarden.yaml";
}

Result<settings::ControllerSettings> load_settings(const GlobalOptions& globals) {
  const auto file = settings_file(globals);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return fail("controller settings file not found", file.string(),
                "pass --config FILE or set PATHWARDEN_CONFIG; policies/README.md documents the format");
  }
  // The settings name the commands pathwarden runs (playbook_command) as this user, often root:
  // a file others may change is refused, as sshd refuses such an authorized_keys.
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(std::string("the settings file is writable by its group or by others (mode ") + mode +
                    "): it names commands pathwarden runs as this user",
                file.string(), "chmod go-w " + file.string());
  }
  return settings::load_controller_settings(file);
}

Result<std::filesystem::path> default_policies_dir(const settings::ControllerSettings& loaded,
                                                   const GlobalOptions& globals) {
  if (loaded.policies_dir.empty()) {
    return fail("no policies directory: the settings file has no spec.policies", settings_file(globals).string(),
                "give the policy PATH on the command line or set spec.policies");
  }
  return std::filesystem::path(loaded.policies_dir);
}

}  // namespace pw::cli
