// SPDX-License-Identifier: GPL-3.0-or-later
// The guest scripts' argument protocol: each src/guest/scripts/*.sh says at its top what
// guest/script_protocol.hpp describes, and the argv builders give the fixed arguments first.
#include "guest/script_protocol.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "guest/change_script.hpp"
#include "guest/probe_report.hpp"
#include "guest/sha256.hpp"

using namespace pw::guest;
namespace fs = std::filesystem;

TEST_CASE("every guest script names its arguments as the one C++ description does") {
  const fs::path dir = fs::path(PW_SOURCE_DIR) / "src" / "guest" / "scripts";
  std::set<std::string> described;
  for (const auto& p : kScriptProtocols) described.insert(std::string(p.script));
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".sh") continue;
    const auto name = entry.path().stem().string();
    // Sourced by the others (marks first, statfs.sh a function): no arguments of their own.
    if (name == "marks" || name == "statfs") continue;
    files.insert(name);
    INFO(entry.path());
    std::ifstream in(entry.path());
    std::string line, declared;
    while (std::getline(in, line)) {
      constexpr std::string_view key = "# pathwarden-args: ";
      if (line.starts_with(key)) {
        declared = line.substr(key.size());
        break;
      }
    }
    CHECK(declared == script_args(name));
  }
  CHECK(files == described);
  CHECK(fixed_argument_count("a b [c]") == 2);
  CHECK(fixed_argument_count("a b... c") == 1);
  CHECK(fixed_argument_count("(none)") == 0);
}

TEST_CASE("the argv builders put the described fixed arguments first") {
  ProbeScriptArgs probe;
  probe.dd_argv = {"dd", "if=/x", "of=/dev/null"};
  CHECK(probe_script_argv(probe).size() == fixed_argument_count(script_args("probe")) + 3);
  FstabChange change;
  change.host = "g";
  change.observed_content = "a\n";
  change.observed_sha256 = sha256_hex("a\n");
  change.new_content = "a\nb\n";
  change.backup_path = "/var/backups/pathwarden/x";
  auto argv = apply_script_argv(change, sha256_hex(change.new_content));
  REQUIRE(argv);
  const auto fixed = fixed_argument_count(script_args("apply"));
  REQUIRE(argv->size() > fixed);
  CHECK(argv->at(fixed - 1) == "5");     // words: c 0 2, t "b\n"
  CHECK(argv->size() == fixed + 5 + 1);  // the edit, then no activations ("0")
  FstabRestore restore{"g", "/var/backups/pathwarden/x", sha256_hex("a\n"), sha256_hex("a\nb\n"), {}};
  auto back = rollback_script_argv(restore);
  REQUIRE(back);
  CHECK(back->size() == fixed_argument_count(script_args("rollback")) + 1);
}
