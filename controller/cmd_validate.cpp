#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <iostream>
#include <set>
#include <tuple>

#include "commands.hpp"
#include "settings/loader.hpp"
#include "settings_file.hpp"

namespace pw::cli {

namespace {

int run_validate(const Args& args, const GlobalOptions& globals) {
  std::vector<std::filesystem::path> inputs;
  for (const auto& p : args.positional()) inputs.emplace_back(p);
  if (inputs.empty()) {
    auto dir = default_policies_dir(globals);
    if (!dir) {
      std::cerr << "pathwarden validate: " << dir.error().to_string() << "\n";
      return 1;
    }
    inputs.emplace_back(*dir);
  }
  auto result = settings::load_paths(inputs);
  auto& diags = result.diagnostics;
  std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.pos.file, a.pos.line, a.pos.column) < std::tie(b.pos.file, b.pos.line, b.pos.column);
  });
  std::set<std::string> bad_files;
  for (const auto& d : diags) bad_files.insert(d.pos.file);

  if (args.value_or("output", "text") == "json") {
    boost::json::array problems;
    for (const auto& d : diags) {
      problems.push_back(
          {{"file", d.pos.file}, {"line", d.pos.line}, {"column", d.pos.column}, {"message", d.message}});
    }
    boost::json::array names;
    for (const auto& p : result.paths) names.push_back(boost::json::string(p.name));
    boost::json::object out{{"valid", diags.empty()},
                            {"policies", names},
                            {"controllers", result.controllers.size()},
                            {"problems", problems}};
    std::cout << boost::json::serialize(out) << "\n";
  } else {
    for (const auto& d : diags) std::cout << d.to_string() << "\n";
    if (diags.empty()) {
      std::cout << "ok: " << result.paths.size() << " storage path polic" << (result.paths.size() == 1 ? "y" : "ies");
      if (!result.controllers.empty()) std::cout << ", " << result.controllers.size() << " controller settings";
      std::cout << "\n";
    } else {
      std::cout << diags.size() << " problem" << (diags.size() == 1 ? "" : "s") << " in " << bad_files.size() << " file"
                << (bad_files.size() == 1 ? "" : "s") << "\n";
    }
  }
  return diags.empty() ? 0 : 1;
}

}  // namespace

Command validate_command() {
  return {
      .name = "validate",
      .summary = "check policy and controller settings files and report every problem",
      .usage = "validate [--output text|json] [PATH...]",
      .description =
          "PATH is a file or a directory (every *.yaml/*.yml below it; hidden directories such as .git\n"
          "are skipped). Without PATH, the policies directory of the controller settings is checked.\n"
          "Each problem is printed as file:line:col: message. Exit status: 0 valid, 1 problems found.",
      .options = {{"output", "FMT", "text (default) or json"}},
      .run = run_validate,
  };
}

}  // namespace pw::cli
