// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Playbook structure as a small ordered tree, emitted with yaml-cpp. Every string is written
// double-quoted, so no value can turn into YAML syntax (and "0700" stays a string).
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pw::ansible {

struct Yaml;
// A multi-line string shown as a YAML literal block (`|`), for scripts a reviewer reads.
struct YamlLiteral {
  std::string text;
};
using YamlList = std::vector<Yaml>;
using YamlMap = std::vector<std::pair<std::string, Yaml>>;

struct Yaml {
  std::variant<std::string, bool, long long, YamlList, YamlMap, YamlLiteral> value;

  Yaml(const char* s) : value(std::string(s)) {}
  Yaml(std::string s) : value(std::move(s)) {}
  Yaml(bool b) : value(b) {}
  Yaml(int i) : value(static_cast<long long>(i)) {}
  Yaml(long long i) : value(i) {}
  Yaml(YamlList l) : value(std::move(l)) {}
  Yaml(YamlMap m) : value(std::move(m)) {}
  Yaml(YamlLiteral l) : value(std::move(l)) {}
};

// A YAML document ("---" first) holding `root`.
std::string emit_yaml_document(const Yaml& root);

}  // namespace pw::ansible
