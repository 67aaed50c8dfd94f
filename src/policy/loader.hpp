// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads pathwarden files and reports every problem found, each as "file:line:col: message": the
// file handling (size, text, YAML syntax, apiVersion and kind of each document), the StoragePath
// documents (storage_path_decoder.cpp) and the checks across policies. Other kinds of document
// come in through DocumentKind: the controller settings (kind: Controller) are decoded by
// src/settings, which depends on policy, never the reverse.
#include <array>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "policy/model.hpp"

namespace pw::policy {

namespace schema {
class Decoder;
class Section;
}  // namespace schema

// Policy files larger than this are refused before parsing: no real policy comes close.
inline constexpr std::size_t kMaxPolicyFileBytes = 1u << 20;

// The keys of every kind of document, and of the metadata each may hold.
inline constexpr std::array<std::string_view, 4> kDocumentKeys{"apiVersion", "kind", "metadata", "spec"};
inline constexpr std::array<std::string_view, 3> kMetadataKeys{"name", "description", "labels"};

// The keys a decoder accepts in one mapping of its kind of document, by the mapping's dotted path
// ("" the document, "spec.mount"): what the kind's JSON Schema lists there (test schema_tables).
struct KeyTable {
  std::string_view path;
  std::span<const std::string_view> keys;
};

// A kind of document read from the same files as StoragePath: the name written after "kind:", and
// the decoder of one such document (its top-level mapping, doc where it starts), which reports
// problems through d and keeps what it accepts.
struct DocumentKind {
  std::string_view name;
  std::function<void(schema::Decoder& d, const schema::Section& top, const SourcePos& doc)> decode;
};

struct LoadResult {
  std::vector<StoragePath> paths;
  Diagnostics diagnostics;  // empty when everything is valid

  bool ok() const { return diagnostics.empty(); }
};

// Parses one file's text; file_name is used in positions and to resolve relative paths. Reads
// StoragePath documents and those of more_kinds; any other kind is a problem.
LoadResult load_text(std::string_view text, const std::string& file_name,
                     std::span<const DocumentKind> more_kinds = {});

// Loads files and directories (every *.yaml / *.yml below them, hidden directories such as .git
// skipped, in sorted order), then checks the policies against each other.
LoadResult load_paths(std::span<const std::filesystem::path> inputs, std::span<const DocumentKind> more_kinds = {});

// Checks across policies: unique names, one owner per guest mount path, one queue count per NIC,
// one VM per inventory host.
Diagnostics check_policy_set(std::span<const StoragePath> paths);

}  // namespace pw::policy
