// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli.hpp"

#include <algorithm>
#include <sstream>

#include "diagnostics/suggest.hpp"

namespace pw::cli {

std::optional<std::string> Args::value(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::string Args::value_or(std::string_view name, std::string fallback) const {
  auto v = value(name);
  return v ? *v : std::move(fallback);
}

std::vector<std::string> Args::values(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

Result<Args> parse_args(const Command& command, const std::vector<std::string>& argv) {
  Args args;
  bool options_done = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      args.add_positional(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      args.add("help", "");
      continue;
    }
    if (!arg.starts_with("--")) {
      return fail("unknown option '" + arg + "'", {},
                  "options are spelled --name; see 'pathwarden " + command.name + " --help'");
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    auto spec = std::find_if(command.options.begin(), command.options.end(),
                             [&](const OptionSpec& o) { return o.name == name; });
    if (spec == command.options.end()) {
      std::vector<std::string> dashed{"--help"};
      for (const auto& o : command.options) dashed.push_back("--" + o.name);
      const std::vector<std::string_view> names(dashed.begin(), dashed.end());
      return fail("unknown option '--" + name + "'" + did_you_mean("--" + name, names), {},
                  "see 'pathwarden " + command.name + " --help'");
    }
    if (spec->value_name.empty()) {
      if (inline_value) return fail("option '--" + name + "' takes no value");
      args.add(name, "");
      continue;
    }
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      return fail("option '--" + name + "' needs a value (" + spec->value_name + ")");
    }
    if (!spec->choices.empty() && std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end()) {
      std::string list;
      for (const auto& c : spec->choices) list += (list.empty() ? "" : ", ") + c;
      const std::vector<std::string_view> names(spec->choices.begin(), spec->choices.end());
      return fail("option '--" + name + "' is '" + value + "'" + did_you_mean(value, names), {}, "use one of " + list);
    }
    if (!spec->repeatable && args.value(name)) {
      return fail("option '--" + name + "' given twice");
    }
    args.add(name, std::move(value));
  }
  return args;
}

std::string help_text(const Command& command) {
  std::ostringstream out;
  out << "Usage: pathwarden " << command.usage << "\n\n" << command.summary << "\n";
  if (!command.description.empty()) out << "\n" << command.description << "\n";
  out << "\nOptions:\n";
  for (const auto& o : command.options) {
    std::string left = "  --" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    out << left << std::string(left.size() < 28 ? 28 - left.size() : 2, ' ') << o.help << "\n";
  }
  out << "  --help                    show this help\n";
  return out.str();
}

const std::vector<OptionSpec>& global_options() {
  static const std::vector<OptionSpec> options{
      {"log-level",
       "LEVEL",
       "trace, debug, info (default), warn, error, critical, off",
       false,
       {"trace", "debug", "info", "warn", "error", "critical", "off"}},
      {"log-format", "FMT", "text (default) or json: one JSON object per line on stderr", false, {"text", "json"}},
      {"config", "FILE", "controller settings (default: $PATHWARDEN_CONFIG or\n/etc/pathwarden/pathwarden.yaml)"},
      {"version", "", "print the version and the git commit it was built from"},
  };
  return options;
}

std::string overview_text(const std::vector<Command>& commands) {
  std::ostringstream out;
  out << "Usage: pathwarden " << kProgramUsage << "\n\n" << kProgramSummary << "\n\nCommands:\n";
  for (const auto& c : commands) {
    out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nGlobal options:\n";
  constexpr std::size_t kColumn = 22;
  for (const auto& o : global_options()) {
    std::string left = "  --" + o.name + (o.value_name.empty() ? "" : " " + o.value_name);
    out << left << std::string(left.size() < kColumn ? kColumn - left.size() : 2, ' ');
    for (char ch : o.help) {
      out << ch;
      if (ch == '\n') out << std::string(kColumn, ' ');
    }
    out << "\n";
  }
  out << "\nRun 'pathwarden help COMMAND' (or 'pathwarden COMMAND --help') for a command's options.\n";
  return out.str();
}

}  // namespace pw::cli
