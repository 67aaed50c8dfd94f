// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/script_output.hpp"

#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

// A uuid (36) or od's 32 hex digits; at least 16 characters of [0-9a-f-].
bool is_token(std::string_view t) {
  return t.size() >= 16 && t.size() <= 64 && t.find_first_not_of("0123456789abcdef-") == std::string_view::npos;
}

}  // namespace

Result<ScriptOutput> split_script_output(std::string_view text, std::string_view what, std::string_view where,
                                         std::size_t max_section_bytes) {
  ScriptOutput out;
  std::string mark;  // "@@TOKEN " once the begin line is seen
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    if (mark.empty()) {
      if (!line.starts_with(kBeginMark)) continue;  // a login shell's words before the script
      auto token = trim(line.substr(kBeginMark.size()));
      if (!is_token(token)) {
        return fail("the guest's " + std::string(what) + " starts with an unreadable token", std::string(where),
                    "the script's first line must be '@@pathwarden begin' and a random token");
      }
      mark = "@@" + std::string(token) + " ";
      continue;
    }
    if (line.starts_with(mark)) {
      std::vector<std::string> words;
      for (auto w : fields_of(line.substr(mark.size()))) words.emplace_back(w);
      if (words.size() == 1 && words[0] == "end") {
        out.finished = true;
        break;
      }
      if (words.empty()) {
        return fail("an empty mark in the guest's " + std::string(what), std::string(where));
      }
      out.sections.push_back(ScriptSection{std::move(words), {}, line_no + 1});
      continue;
    }
    if (out.sections.empty()) continue;  // between the begin line and the first mark: nothing of ours
    auto& body = out.sections.back().body;
    if (body.size() + line.size() + 1 > max_section_bytes) {
      std::string name;
      for (const auto& w : out.sections.back().words) name += (name.empty() ? "" : " ") + w;
      return fail("section '" + name + "' of the guest's " + std::string(what) + " is over " +
                      std::to_string(max_section_bytes >> 20) + " MiB",
                  std::string(where), "nothing of it was read; a guest with that much to report is not supported");
    }
    body.append(line).push_back('\n');
  }
  if (mark.empty()) {
    return fail("the guest's " + std::string(what) + " has no begin mark: the script did not start", std::string(where),
                "check that /bin/sh, base64 and timeout work there (a login shell that exits early ends it too)");
  }
  return out;
}

std::string framed_output(std::string_view token, const std::vector<std::pair<std::string, std::string>>& sections,
                          bool finished) {
  std::string out = std::string(kBeginMark) + std::string(token) + "\n";
  for (const auto& [head, body] : sections) {
    out += "@@" + std::string(token) + " " + head + "\n" + body;
    if (!body.empty() && body.back() != '\n') out.push_back('\n');
  }
  if (finished) out += "@@" + std::string(token) + " end\n";
  return out;
}

}  // namespace pw::guest
