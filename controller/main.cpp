// SPDX-License-Identifier: GPL-3.0-or-later
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "build_info/build_info.hpp"
#include "cli.hpp"
#include "command_errors.hpp"
#include "commands.hpp"
#include "diagnostics/suggest.hpp"
#include "logging.hpp"

namespace {

using pw::cli::Command;

std::vector<Command> all_commands() {
  return {
      pw::cli::import_command(),    pw::cli::validate_command(), pw::cli::plan_command(),    pw::cli::apply_command(),
      pw::cli::reconcile_command(), pw::cli::verify_command(),   pw::cli::recover_command(), pw::cli::status_command(),
      pw::cli::proxmox_command(),   pw::cli::report_command(),

  };
}

void print_usage(const std::vector<Command>& commands) {
  std::cout << pw::cli::overview_text(commands);
}

// The global options, the command and its arguments, in one pass over argv. Long because the
// parse is one loop with the few global options handled inline, as a reader expects to find them.
int run(int argc, char** argv) {
  const auto commands = all_commands();
  pw::cli::GlobalOptions globals;
  std::vector<std::string> rest;
  std::string command_name;
  bool after_double_dash = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!after_double_dash) {
      auto take = [&](const std::string& name, std::string& into) -> bool {
        if (arg == name) {
          if (i + 1 >= argc) {
            std::cerr << "pathwarden: option '" << name << "' needs a value\n";
            std::exit(1);
          }
          into = argv[++i];
          return true;
        }
        if (arg.starts_with(name + "=")) {
          into = arg.substr(name.size() + 1);
          return true;
        }
        return false;
      };
      std::string config;
      if (take("--log-level", globals.log_level) || take("--log-format", globals.log_format)) continue;
      if (take("--config", config)) {
        globals.config_file = config;
        continue;
      }
      if (arg == "--") after_double_dash = true;
      if (command_name.empty()) {
        if (arg == "--version") {
          std::cout << pw::build_info::version_line() << "\n";
          return 0;
        }
        // Hidden: the build generates pathwarden(1) (--help-man DATE, the package changelog's
        // date) and the bash completion with these; the completion runs the third.
        if (arg == "--help-man") {
          std::cout << pw::cli::man_page(commands, PW_VERSION, i + 1 < argc ? argv[i + 1] : "");
          return 0;
        }
        if (arg == "--bash-completion") {
          std::cout << pw::cli::bash_completion(commands);
          return 0;
        }
        if (arg == "--complete-policy-names") {
          return pw::cli::complete_policy_names({argv + i + 1, argv + argc}, globals);
        }
        if (arg == "help" && i + 1 < argc) {  // "pathwarden help CMD" = "pathwarden CMD --help"
          command_name = argv[++i];
          rest.emplace_back("--help");
          continue;
        }
        if (arg == "--help" || arg == "-h" || arg == "help") {
          print_usage(commands);
          return 0;
        }
        if (!arg.starts_with("-")) {
          command_name = arg;
          continue;
        }
      }
    }
    rest.push_back(arg);
  }
  if (command_name.empty()) {
    print_usage(commands);
    return 1;
  }
  // Logging first (colours decided again below, with the command's --no-color): every failure
  // after this is said on stderr as the log lines are, and under --output json also on stdout.
  if (auto st = pw::cli::configure_logging(globals.log_level, globals.log_format); !st) {
    std::cerr << "pathwarden: " << st.error().to_string() << "\n";
    return 1;
  }
  pw::cli::set_error_channels({pw::cli::asks_json_output(rest), globals.log_format == "json"});
  const Command* command = nullptr;
  std::vector<std::string_view> names;
  for (const auto& c : commands) {
    names.push_back(c.name);
    if (c.name == command_name) command = &c;
  }
  if (command == nullptr) {
    return pw::cli::fail_command(
        "", pw::Error{"unknown command '" + command_name + "'" + pw::did_you_mean(command_name, names),
                      {},
                      "run 'pathwarden --help' for the list"});
  }
  auto args = pw::cli::parse_args(*command, rest);
  if (!args) return pw::cli::fail_command(command->name, args.error());
  if (args->flag("help")) {
    std::cout << pw::cli::help_text(*command);
    return 0;
  }
  if (args->flag("no-color")) (void)pw::cli::configure_logging(globals.log_level, globals.log_format, false);
  pw::cli::set_error_channels({args->value_or("output", "text") == "json", globals.log_format == "json"});
  return command->run(*args, globals);
}

}  // namespace

int main(int argc, char** argv) {
  // It holds an API secret: no core dump, no ptrace by another process of the same user, and
  // /proc/PID/environ and /proc/PID/mem readable by root only (children reset this at exec).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Exceptions are programmer errors; still, an operator gets one line, never a core dump.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    return pw::cli::fail_command(
        "", pw::Error{std::string("internal error: ") + e.what(), {}, "please report this with the command line"}, 70);
  } catch (...) {
    std::fprintf(stderr, "pathwarden: internal error (please report this with the command line)\n");
  }
  return 70;
}
