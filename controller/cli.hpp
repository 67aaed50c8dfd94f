// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The command line: one Command per subcommand, each with its own options and --help.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::cli {

// What an option's value names, where the bash completion can offer it: a policy's name is read
// from the policy files (files and directories are told by their value_name: FILE, DIR, ...).
enum class ValueKind { text, policy_name };

struct OptionSpec {
  std::string name;        // long name without dashes: "out"
  std::string value_name;  // empty for a flag, e.g. "FILE"
  std::string help;
  bool repeatable = false;
  std::vector<std::string> choices = {};  // the values it takes, when they are a fixed list
  ValueKind kind = ValueKind::text;
};

// --output of every command that has one: a value outside the list is refused, never ignored.
inline const OptionSpec kOutput{"output", "FMT", "text (default) or json", false, {"text", "json"}};

// What the parser found: flags and option values by name, then the positional arguments.
class Args {
 public:
  bool flag(std::string_view name) const { return values_.contains(std::string(name)); }
  std::optional<std::string> value(std::string_view name) const;
  std::string value_or(std::string_view name, std::string fallback) const;
  std::vector<std::string> values(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  void add(const std::string& name, std::string value) { values_[name].push_back(std::move(value)); }
  void add_positional(std::string value) { positional_.push_back(std::move(value)); }

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::vector<std::string> positional_;
};

struct GlobalOptions {
  std::string log_level = "info";
  std::string log_format = "text";  // text | json
  std::optional<std::string> config_file;
};

struct Command {
  std::string name;
  std::string summary;      // one line for the command list
  std::string usage;        // "validate [PATH...]"
  std::string description;  // paragraphs shown by --help
  std::vector<OptionSpec> options;
  std::function<int(const Args&, const GlobalOptions&)> run;
  // The words its first argument must be one of ("proxmox nics"); empty when it takes paths.
  std::vector<std::string> actions = {};
};

// Parses argv for one command. --help is handled by the caller through Args::flag("help").
Result<Args> parse_args(const Command& command, const std::vector<std::string>& argv);

std::string help_text(const Command& command);

// The top level: what 'pathwarden --help' prints, from the tables below. The man page and the
// bash completion (manpage.cpp) are generated from the same tables and Command fields.
inline constexpr std::string_view kProgramSummary =
    "Reconciles Proxmox guests' storage paths to declarative policies and proves each change\n"
    "with interface byte counters.";
inline constexpr std::string_view kProgramUsage =
    "[--log-level LEVEL] [--log-format text|json] [--config FILE] COMMAND [ARGS]";
// Options given before the command; a "\n" in help continues on the next line, aligned.
const std::vector<OptionSpec>& global_options();
std::string overview_text(const std::vector<Command>& commands);

// pathwarden(1) in roff, one subsection per command, dated DATE (YYYY-MM-DD: the package's
// changelog entry, so that a rebuild makes the same page); and a bash completion script.
std::string man_page(const std::vector<Command>& commands, std::string_view version, std::string_view date);
std::string bash_completion(const std::vector<Command>& commands);

// The examples of pathwarden(1): what it does, then the command line (without "pathwarden").
struct Example {
  std::string_view what;
  std::string_view line;
};
const std::vector<Example>& examples();

// The hidden 'pathwarden --complete-policy-names [PATH...]' the completion runs: the names of the
// policies in PATH (else the settings' policies directory), one per line; nothing and exit 0 on
// any problem, as a completion must never print an error into the operator's command line.
int complete_policy_names(const std::vector<std::string>& paths, const GlobalOptions& globals);

}  // namespace pw::cli
