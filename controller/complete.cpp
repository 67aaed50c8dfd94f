// SPDX-License-Identifier: GPL-3.0-or-later
// The hidden 'pathwarden [--config FILE] --complete-policy-names [PATH...]' the bash completion
// runs for the value of --policy and --exclude: the names as pathwarden reads them, so a
// completion offers exactly what a run would select, from the same files.
#include <iostream>
#include <set>

#include "cli.hpp"
#include "settings/loader.hpp"
#include "settings_file.hpp"

namespace pw::cli {

int complete_policy_names(const std::vector<std::string>& paths, const GlobalOptions& globals) {
  std::vector<std::filesystem::path> inputs(paths.begin(), paths.end());
  if (inputs.empty()) {
    auto settings = load_settings(globals);
    if (!settings) return 0;
    auto dir = default_policies_dir(*settings, globals);
    if (!dir) return 0;
    inputs.push_back(*dir);
  }
  // A file with a problem gives no name; the others still do (the operator is typing, not
  // validating). Sorted and once each. The completion hands them to compgen -W, which expands
  // its words: safe because a policy name is only [a-z0-9._-] (the decoder refuses others).
  std::set<std::string> names;
  for (const auto& p : settings::load_paths(inputs).paths) names.insert(p.name);
  for (const auto& n : names) std::cout << n << "\n";
  return 0;
}

}  // namespace pw::cli
