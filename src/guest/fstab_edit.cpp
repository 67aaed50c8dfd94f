// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/fstab_edit.hpp"

#include <unordered_map>

namespace pw::guest {
namespace {

struct Line {
  std::uint64_t offset = 0;
  std::string_view body;  // without its "\n"
  bool newline = false;
};

std::vector<Line> lines_with_offsets(std::string_view text) {
  std::vector<Line> out;
  std::uint64_t at = 0;
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    const auto end = nl == std::string_view::npos ? text.size() : nl;
    out.push_back(Line{at, text.substr(at, end - at), nl != std::string_view::npos});
    at = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return out;
}

void add_copy(std::vector<EditPiece>& out, std::uint64_t offset, std::uint64_t length) {
  if (length == 0) return;
  if (!out.empty() && out.back().kind == EditPiece::Kind::copy && out.back().offset + out.back().length == offset) {
    out.back().length += length;
    return;
  }
  out.push_back(EditPiece{EditPiece::Kind::copy, offset, length, {}});
}

void add_text(std::vector<EditPiece>& out, std::string_view text) {
  if (text.empty()) return;
  if (!out.empty() && out.back().kind == EditPiece::Kind::text) {
    out.back().text.append(text);
    return;
  }
  out.push_back(EditPiece{EditPiece::Kind::text, 0, 0, std::string(text)});
}

}  // namespace

std::vector<EditPiece> fstab_edit(std::string_view observed, std::string_view wanted) {
  // Each observed line by its text (the first of equal ones); a wanted line found there is a copy
  // wherever it stands, so a line that moved is copied too, never sent.
  std::unordered_map<std::string_view, Line> known;
  for (const auto& l : lines_with_offsets(observed)) known.emplace(l.body, l);
  std::vector<EditPiece> out;
  for (const auto& l : lines_with_offsets(wanted)) {
    auto it = known.find(l.body);
    if (it == known.end()) {
      add_text(out, l.body);
      if (l.newline) add_text(out, "\n");
      continue;
    }
    const auto& o = it->second;
    if (l.newline && o.newline) {
      add_copy(out, o.offset, o.body.size() + 1);
    } else {
      add_copy(out, o.offset, o.body.size());
      if (l.newline) add_text(out, "\n");
    }
  }
  return out;
}

std::string apply_edit(std::string_view observed, const std::vector<EditPiece>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    if (p.kind == EditPiece::Kind::text) {
      out += p.text;
    } else if (p.offset < observed.size()) {
      out += observed.substr(p.offset, p.length);
    }
  }
  return out;
}

std::vector<std::string> edit_argv(const std::vector<EditPiece>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) {
    if (p.kind == EditPiece::Kind::copy) {
      out.insert(out.end(), {"c", std::to_string(p.offset), std::to_string(p.length)});
    } else {
      out.insert(out.end(), {"t", p.text});
    }
  }
  return out;
}

}  // namespace pw::guest
