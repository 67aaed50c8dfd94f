#pragma once
// Reads policy files (kind: StoragePath) and controller settings (kind: Controller) and reports
// every problem found, each as "file:line:col: message".
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "policy/model.hpp"

namespace pw::policy {

// Policy files larger than this are refused before parsing: no real policy comes close.
inline constexpr std::size_t kMaxPolicyFileBytes = 1u << 20;

struct LoadResult {
  std::vector<StoragePath> paths;
  std::vector<ControllerSettings> controllers;
  Diagnostics diagnostics;  // empty when everything is valid

  bool ok() const { return diagnostics.empty(); }
};

// Parses one file's text; file_name is used in positions and to resolve relative paths.
LoadResult load_text(std::string_view text, const std::string& file_name);

// Loads files and directories (every *.yaml / *.yml below them, hidden directories such as .git
// skipped, in sorted order), then checks the policies against each other.
LoadResult load_paths(std::span<const std::filesystem::path> inputs);

// Checks across policies: unique names, one owner per guest mount path, one queue count per NIC,
// one VM per inventory host.
Diagnostics check_policy_set(std::span<const StoragePath> paths);

// Loads the controller settings file (exactly one kind: Controller document).
Result<ControllerSettings> load_controller_settings(const std::filesystem::path& file);

}  // namespace pw::policy
