// SPDX-License-Identifier: GPL-3.0-or-later
// pathwarden(1) and the bash completion, generated from the command table and the texts that
// --help prints (cli.hpp), so that the manual and the completion cannot drift from the binary.
// The build runs the hidden 'pathwarden --help-man' and 'pathwarden --bash-completion'.
#include <sstream>

#include "cli.hpp"
#include "report/run_report.hpp"

namespace pw::cli {

namespace {

// Text for roff: backslashes and hyphens escaped, a line never starts with a control character.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (char ch : text) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    line_start = ch == '\n';
    if (ch == '\\') {
      out += "\\e";
    } else if (ch == '-') {
      out += "\\-";
    } else {
      out += ch;
    }
  }
  return out;
}

// Paragraphs of help text (separated by blank lines) as roff paragraphs, filled by the formatter.
std::string roff_paragraphs(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find("\n\n", start);
    std::string_view paragraph = text.substr(start, end == std::string_view::npos ? text.npos : end - start);
    while (!paragraph.empty() && paragraph.back() == '\n') paragraph.remove_suffix(1);
    while (!paragraph.empty() && paragraph.front() == '\n') paragraph.remove_prefix(1);
    if (!paragraph.empty()) out += ".PP\n" + roff(paragraph) + "\n";
    if (end == std::string_view::npos) break;
    start = end + 2;
  }
  return out;
}

std::string roff_option(const OptionSpec& o) {
  std::string help = o.help;
  for (auto& ch : help) {
    if (ch == '\n') ch = ' ';
  }
  std::string out = ".TP\n";
  if (o.value_name.empty()) {
    out += ".B \\-\\-" + roff(o.name);
  } else {
    out += ".BI \"\\-\\-" + roff(o.name) + " \" " + roff(o.value_name);
  }
  out +=
      "\n" + roff(help) + (o.repeatable && help.find("repeatable") == std::string::npos ? " (repeatable)" : "") + "\n";
  return out;
}

// A word list for bash's compgen -W inside single quotes (option names and choices have none).
std::string words(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& w : list) out += (out.empty() ? "" : " ") + w;
  return out;
}

// case arms completing the value after an option: its choices, file names, policy names, or
// nothing. `valued` lists the command's options that take a value (for _pathwarden_args).
std::string value_cases(const std::vector<OptionSpec>& options, const std::string& valued, const std::string& indent) {
  std::string out;
  for (const auto& o : options) {
    if (o.value_name.empty()) continue;
    out += indent + "--" + o.name + ") ";
    if (!o.choices.empty()) {
      out += "COMPREPLY=($(compgen -W '" + words(o.choices) + "' -- \"$cur\")); return ;;\n";
    } else if (o.kind == ValueKind::policy_name) {
      out += "_pathwarden_policies \"$cmd_at\" '" + valued + "'; return ;;\n";
    } else if (o.value_name.ends_with("FILE") || o.value_name == "DIR" || o.value_name.ends_with(".json")) {
      out += "COMPREPLY=($(compgen -f -- \"$cur\")); compopt -o filenames 2>/dev/null; return ;;\n";
    } else {
      out += "return ;;\n";
    }
  }
  return out;
}

// The case arm of one command: the value after an option, its options, then its arguments (its
// action words, or file names).
std::string command_case(const Command& c) {
  std::vector<std::string> flags{"--help"};
  std::vector<std::string> valued;
  for (const auto& o : c.options) {
    flags.push_back("--" + o.name);
    if (!o.value_name.empty()) valued.push_back("--" + o.name);
  }
  std::string out = "    " + c.name + ")\n" + "      case $prev in\n" +
                    value_cases(c.options, words(valued), "        ") + "      esac\n" +
                    "      if [[ $cur == -* ]]; then\n" + "        COMPREPLY=($(compgen -W '" + words(flags) +
                    "' -- \"$cur\"))\n";
  if (c.actions.empty()) {
    out += "      else\n        COMPREPLY=($(compgen -f -- \"$cur\")); compopt -o filenames 2>/dev/null\n";
  } else {
    out += "      else\n        _pathwarden_args \"$cmd_at\" '" + words(valued) + "'\n" +
           "        ((${#_pw_args[@]} == 0)) && COMPREPLY=($(compgen -W '" + words(c.actions) + "' -- \"$cur\"))\n";
  }
  return out + "      fi\n      ;;\n";
}

}  // namespace

const std::vector<Example>& examples() {
  static const std::vector<Example> list{
      {"Check the policies and the controller settings (the files they name, each policy's host in the "
       "inventory) before anything else:",
       "validate"},
      {"See what a run would change, line by line, changing nothing:", "reconcile --check --diff"},
      {"Write a policy for each NFS mount a guest has now; its hand-written fstab entries are adopted as they "
       "are:",
       "import /etc/pathwarden/policies --host media-vm"},
      {"Save a plan for review, then apply exactly that plan (refused if the guests changed since):",
       "plan --policy movies-10g --out movies.plan.json"},
      {"", "apply movies.plan.json"},
      {"Reconcile every policy but the lab's:", "reconcile --exclude 'lab-*'"},
      {"Audit every path without changing it, measuring the bytes each interface carries:", "verify --probe"},
      {"Why a policy is not converged, what to do, and its last runs:", "status --policy movies-10g"},
      {"Finish or undo what a killed run left behind:", "recover"},
      {"The NICs and virtio queues of every VM on one node:", "proxmox nics --node pve1"},
      {"A run for a pipeline: the report as JSON on stdout, log lines as JSON on stderr:",
       "--log-format json reconcile --output json"},
      {"The last result of every policy as a web page:", "report --html /var/www/html/pathwarden.html"},
  };
  return list;
}

std::string man_page(const std::vector<Command>& commands, std::string_view version, std::string_view date) {
  std::ostringstream out;
  out << ".\\\" Generated by 'pathwarden --help-man' from the texts of 'pathwarden --help'; do not edit.\n"
      << ".TH PATHWARDEN 1 \"" << roff(date) << "\" \"pathwarden " << roff(version) << "\" \"User Commands\"\n"
      << ".nh\n.ad l\n"  // paths and option names are neither hyphenated nor stretched
      << ".SH NAME\npathwarden \\- reconcile Proxmox guests' storage paths to declarative policies\n"
      << ".SH SYNOPSIS\n.B pathwarden\n"
      << roff(kProgramUsage) << "\n"
      << ".SH DESCRIPTION\n"
      << roff_paragraphs(kProgramSummary)
      << ".PP\nCommands (each has its own section below, and its own\n.BR \\-\\-help ):\n";
  for (const auto& c : commands) out << ".TP\n.B " << roff(c.name) << "\n" << roff(c.summary) << "\n";
  out << ".SH GLOBAL OPTIONS\nGiven before the command.\n";
  for (const auto& o : global_options()) out << roff_option(o);
  out << ".TP\n.B \\-\\-help\nshow the list of commands\n";
  out << ".SH COMMANDS\n";
  for (const auto& c : commands) {
    out << ".SS \"pathwarden " << roff(c.name) << "\"\n"
        << ".B pathwarden\n"
        << roff(c.usage) << "\n"
        << ".PP\n"
        << roff(c.summary) << ".\n"
        << roff_paragraphs(c.description);
    if (!c.options.empty()) {
      out << ".PP\nOptions:\n.RS\n";
      for (const auto& o : c.options) out << roff_option(o);
      out << ".TP\n.B \\-\\-help\nshow this command's help\n.RE\n";
    }
  }
  out << ".SH EXIT STATUS\n"
         "reconcile, apply, verify and recover; when several apply, the first of 5, 128+N, 4, 6, 7, 3, 2, 0.\n";
  for (const auto& line : report::exit_code_list())
    out << ".TP\n.B " << roff(line.code) << "\n" << roff(line.meaning) << "\n";
  out << ".SH EXAMPLES\n";
  for (const auto& e : examples()) {
    if (!e.what.empty()) out << ".PP\n" << roff(e.what) << "\n";
    out << ".RS 4\n.nf\npathwarden " << roff(e.line) << "\n.fi\n.RE\n";
  }
  out << ".SH FILES\n"
      << ".TP\n.I /etc/pathwarden/pathwarden.yaml\ncontroller settings (or\n.B \\-\\-config\n"
         "or $PATHWARDEN_CONFIG): the Proxmox API, the Ansible inventory and key, the policies directory\n"
      << ".TP\n.I /var/lib/pathwarden\nstate directory: journals, locks, the last result of each policy\n"
      << ".TP\n.I /etc/default/pathwarden\noverrides read by pathwarden.service\n"
      << ".TP\n.I /lib/systemd/system/pathwarden.service\n.PD 0\n.TP\n.I /lib/systemd/system/pathwarden.timer\n"
         ".PD\nthe scheduled run (hourly; the package does not enable it)\n"
      << ".TP\n.I /usr/share/doc/pathwarden/examples/policies\nexample policies\n"
      << ".SH ENVIRONMENT\n"
      << ".TP\n.B PATHWARDEN_CONFIG\nthe controller settings file when\n.B \\-\\-config\nis not given\n"
      << ".TP\n.B TZ\nthe zone of restart windows that name none (else /etc/localtime)\n"
      << ".TP\n.B NO_COLOR\nno colours in log lines and text output\n"
      << ".TP\n.B JOURNAL_STREAM\nset by systemd: log lines for journald (no time stamps, priorities)\n"
      << ".PP\nThe variables the settings name for secrets (the API token or password) are read, never logged. "
         "ansible\\-playbook and ansible\\-inventory inherit the environment (SSH_AUTH_SOCK, ANSIBLE_CONFIG); "
         "pathwarden sets the ANSIBLE_ variables its playbooks depend on (host key checking on, its own output "
         "callback).\n"
      << ".SH SEE ALSO\n"
      << ".BR systemd.exec (5),\n.BR ansible\\-playbook (1);\n"
         "README.md and policies/README.md in /usr/share/doc/pathwarden (the package) or the source tree.\n";
  return out.str();
}

// Long because it is the script's text in order: its two helpers, the global part, then a case
// arm per command (command_case).
std::string bash_completion(const std::vector<Command>& commands) {
  std::vector<std::string> names;
  for (const auto& c : commands) names.push_back(c.name);
  std::vector<std::string> globals{"--help"};
  std::string global_valued;  // "--log-level|--log-format": skipped with their value
  for (const auto& o : global_options()) {
    globals.push_back("--" + o.name);
    if (!o.value_name.empty() && o.name != "config") {
      global_valued += (global_valued.empty() ? "" : "|") + ("--" + o.name);
    }
  }
  std::ostringstream out;
  out << "# bash completion for pathwarden; generated by 'pathwarden --bash-completion' from its command\n"
         "# table, do not edit.\n"
         "\n"
         "# The arguments typed after the command at word $1 (not options, not the values of the options\n"
         "# listed in $2): into _pw_args.\n"
         "_pathwarden_args() {\n"
         "  local j valued=\" $2 \"\n"
         "  _pw_args=()\n"
         "  for ((j = $1 + 1; j < COMP_CWORD; j++)); do\n"
         "    case ${COMP_WORDS[j]} in\n"
         "      -*) [[ $valued == *\" ${COMP_WORDS[j]} \"* ]] && ((j++)) ;;\n"
         "      *) _pw_args+=(\"${COMP_WORDS[j]}\") ;;\n"
         "    esac\n"
         "  done\n"
         "}\n"
         "\n"
         "# Policy names, from the paths typed after the command (else the settings' policies directory,\n"
         "# with the --config typed before it), as pathwarden itself reads them.\n"
         "_pathwarden_policies() {\n"
         "  local IFS=$'\\n' found\n"
         "  _pathwarden_args \"$1\" \"$2\"\n"
         "  found=$(\"${COMP_WORDS[0]}\" \"${cfg[@]}\" --complete-policy-names \"${_pw_args[@]}\" 2>/dev/null)\n"
         "  COMPREPLY=($(compgen -W \"$found\" -- \"$cur\"))\n"
         "}\n"
         "\n"
         "_pathwarden() {\n"
         "  local cur prev cmd cmd_at i\n"
         "  local -a cfg=() _pw_args=()\n"
         "  cur=${COMP_WORDS[COMP_CWORD]}\n"
         "  prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "  cmd=\n"
         "  cmd_at=0\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in\n"
         "      --config) cfg=(--config \"${COMP_WORDS[i+1]}\"); ((i++)) ;;\n"
         "      --config=*) cfg=(\"${COMP_WORDS[i]}\") ;;\n"
         "      "
      << global_valued
      << ") ((i++)) ;;\n"
         "      -*) ;;\n"
         "      *) cmd=${COMP_WORDS[i]}; cmd_at=$i; break ;;\n"
         "    esac\n"
         "  done\n"
         "  if [[ -z $cmd ]]; then\n"
         "    case $prev in\n"
      << value_cases(global_options(), "", "      ")
      << "    esac\n"
         "    if [[ $cur == -* ]]; then\n"
         "      COMPREPLY=($(compgen -W '"
      << words(globals)
      << "' -- \"$cur\"))\n"
         "    else\n"
         "      COMPREPLY=($(compgen -W 'help "
      << words(names)
      << "' -- \"$cur\"))\n"
         "    fi\n"
         "    return\n"
         "  fi\n"
         "  case $cmd in\n";
  for (const auto& c : commands) out << command_case(c);
  out << "    help) COMPREPLY=($(compgen -W '" << words(names) << "' -- \"$cur\")) ;;\n"
      << "  esac\n"
         "}\n"
         "complete -F _pathwarden pathwarden\n";
  return out.str();
}

}  // namespace pw::cli
