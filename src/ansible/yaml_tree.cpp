// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/yaml_tree.hpp"

#include <yaml-cpp/yaml.h>

namespace pw::ansible {

namespace {

void emit(YAML::Emitter& out, const Yaml& node) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out << YAML::DoubleQuoted << v;
        } else if constexpr (std::is_same_v<T, bool>) {
          out << YAML::TrueFalseBool << v;
        } else if constexpr (std::is_same_v<T, long long>) {
          out << v;
        } else if constexpr (std::is_same_v<T, YamlLiteral>) {
          out << YAML::Literal << v.text;
        } else if constexpr (std::is_same_v<T, YamlList>) {
          out << (v.empty() ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
          for (const auto& item : v) emit(out, item);
          out << YAML::EndSeq;
        } else {
          out << (v.empty() ? YAML::Flow : YAML::Block) << YAML::BeginMap;
          for (const auto& [key, value] : v) {
            out << YAML::Key << key << YAML::Value;
            emit(out, value);
          }
          out << YAML::EndMap;
        }
      },
      node.value);
}

}  // namespace

std::string emit_yaml_document(const Yaml& root) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginDoc;
  emit(out, root);
  std::string text = out.c_str();
  text.push_back('\n');
  return text;
}

}  // namespace pw::ansible
