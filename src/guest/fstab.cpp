// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/fstab.hpp"

#include <algorithm>
#include <cstdio>

#include "guest/tokens.hpp"

namespace pw::guest {

namespace {

constexpr std::string_view kOwnerPrefix = "# Managed by pathwarden (policy ";

bool is_blank_char(char c) {
  return c == ' ' || c == '\t';
}

std::string_view leading_blanks(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_blank_char(line[i])) ++i;
  return line.substr(0, i);
}

// The blank runs between fields, so a rewritten entry keeps the column layout of the old one.
std::vector<std::string> separators_of(std::string_view line) {
  std::vector<std::string> seps;
  std::size_t i = leading_blanks(line).size();
  while (i < line.size()) {
    while (i < line.size() && !is_blank_char(line[i])) ++i;
    std::size_t start = i;
    while (i < line.size() && is_blank_char(line[i])) ++i;
    if (i < line.size()) seps.emplace_back(line.substr(start, i - start));
  }
  return seps;
}

// Comment text cannot span lines: control characters and runs of blanks become one space.
std::string one_line(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (char c : text) {
    bool blank = static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ';
    if (blank) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

struct ParsedLine {
  FstabLine::Kind kind;
  std::optional<FstabEntry> entry;
  std::optional<Diagnostic> problem;
};

ParsedLine parse_line(std::string_view text, const std::string& where, int line_no) {
  auto indent = leading_blanks(text).size();
  if (indent == text.size()) return {FstabLine::Kind::blank, std::nullopt, std::nullopt};
  if (text[indent] == '#') return {FstabLine::Kind::comment, std::nullopt, std::nullopt};

  auto fields = fields_of(text);
  auto column_of = [&](std::size_t field) { return static_cast<int>(fields[field].data() - text.data()) + 1; };
  auto problem = [&](int column, std::string message) {
    return ParsedLine{FstabLine::Kind::malformed, std::nullopt,
                      Diagnostic{SourcePos{where, line_no, column}, std::move(message)}};
  };
  if (fields.size() < 3) {
    return problem(static_cast<int>(indent) + 1,
                   "fstab entry has " + std::to_string(fields.size()) +
                       " field(s); mount needs at least spec, mount point and type (line kept as it is)");
  }
  FstabEntry entry;
  entry.spec = decode_octal_escapes(fields[0]);
  entry.file = decode_octal_escapes(fields[1]);
  entry.vfstype = decode_octal_escapes(fields[2]);
  entry.options = fields.size() > 3 ? decode_octal_escapes(fields[3]) : "defaults";
  for (std::size_t i = 4; i < std::min<std::size_t>(fields.size(), 6); ++i) {
    auto number = to_int(fields[i]);
    if (!number) {
      return problem(column_of(i), std::string(i == 4 ? "dump" : "pass") + " field '" + std::string(fields[i]) +
                                       "' is not a number (line kept as it is)");
    }
    (i == 4 ? entry.dump : entry.pass) = *number;
  }
  std::optional<Diagnostic> note;
  if (fields.size() > 6) {
    // mount(8) reads such a line and ignores the rest; say so, as the rest may be a lost comment.
    note = Diagnostic{SourcePos{where, line_no, column_of(6)},
                      "text after the 6th field is ignored by mount: '" + std::string(fields[6]) + "'..."};
  }
  return {FstabLine::Kind::entry, std::move(entry), std::move(note)};
}

std::string format_entry(const FstabEntrySpec& spec, std::string_view indent, const std::vector<std::string>& seps) {
  const std::string fields[] = {encode_fstab_field(spec.spec),    encode_fstab_field(spec.file),
                                encode_fstab_field(spec.vfstype), encode_fstab_field(join_options(spec.options)),
                                std::to_string(spec.dump),        std::to_string(spec.pass)};
  std::string out(indent);
  for (std::size_t i = 0; i < std::size(fields); ++i) {
    if (i > 0) out += i - 1 < seps.size() ? seps[i - 1] : std::string(" ");
    out += fields[i];
  }
  return out;
}

// Missing dump/pass fields mean 0 to mount(8), so they do not make an entry differ.
bool same_meaning(const FstabEntry& a, const FstabEntry& b) {
  return a.spec == b.spec && a.file == b.file && a.vfstype == b.vfstype && a.options == b.options &&
         a.dump.value_or(0) == b.dump.value_or(0) && a.pass.value_or(0) == b.pass.value_or(0);
}

}  // namespace

std::vector<std::string> FstabEntry::option_list() const {
  std::vector<std::string> out;
  std::string_view rest = options;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    // libmount skips empty items ("rw,,hard" is rw and hard), and so does mount(8).
    if (comma != 0) out.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::string join_options(const std::vector<std::string>& options) {
  if (options.empty()) return "defaults";
  std::string out;
  for (const auto& o : options) {
    if (!out.empty()) out.push_back(',');
    out += o;
  }
  return out;
}

std::string encode_fstab_field(std::string_view value) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    bool escape =
        c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\' || c == '\v' || c == '\f' || (i == 0 && c == '#');
    if (escape) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string owner_comment(const EntryOwner& owner) {
  std::string line = std::string(kOwnerPrefix) + one_line(owner.policy) + ")";
  auto reason = one_line(owner.reason);
  if (!reason.empty()) line += ": " + reason;
  return line;
}

std::optional<EntryOwner> parse_owner_comment(std::string_view line) {
  line = trim(line);
  if (!line.starts_with(kOwnerPrefix)) return std::nullopt;
  line.remove_prefix(kOwnerPrefix.size());
  auto close = line.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  EntryOwner owner{std::string(line.substr(0, close)), {}};
  auto rest = line.substr(close + 1);
  if (rest.starts_with(": ")) owner.reason = std::string(rest.substr(2));
  return owner;
}

Status validate_entry_spec(const FstabEntrySpec& spec) {
  auto require = [](const std::string& value, std::string_view field) -> Status {
    if (value.empty()) return fail(std::string(field) + " of the fstab entry is empty", {}, "give a value");
    return {};
  };
  if (auto s = require(spec.spec, "spec (device)"); !s) return s;
  if (auto s = require(spec.file, "mount point"); !s) return s;
  if (auto s = require(spec.vfstype, "filesystem type"); !s) return s;
  if (spec.file.front() != '/' && spec.file != "none") {
    return fail("mount point '" + spec.file + "' is not an absolute path", {}, "write it as /mnt/...");
  }
  for (const auto& option : spec.options) {
    if (option.empty()) return fail("an empty mount option in the fstab entry for " + spec.file, {}, "remove it");
    if (option.find(',') != std::string::npos) {
      return fail("mount option '" + option + "' contains a comma", {}, "give each option separately");
    }
  }
  if (spec.dump < 0 || spec.pass < 0) return fail("dump and pass of the fstab entry must not be negative");
  return {};
}

FstabFile FstabFile::parse(std::string_view content, std::string where) {
  FstabFile file;
  file.where_ = std::move(where);
  int line_no = 0;
  while (!content.empty()) {
    ++line_no;
    auto nl = content.find('\n');
    FstabLine line;
    std::string_view text = nl == std::string_view::npos ? content : content.substr(0, nl);
    if (nl != std::string_view::npos) {
      line.terminator = "\n";
      if (!text.empty() && text.back() == '\r') {
        text.remove_suffix(1);
        line.terminator = "\r\n";
      }
    }
    line.text = std::string(text);
    auto parsed = parse_line(text, file.where_, line_no);
    line.kind = parsed.kind;
    line.entry = std::move(parsed.entry);
    if (parsed.problem) file.diagnostics_.push_back(std::move(*parsed.problem));
    file.lines_.push_back(std::move(line));
    if (nl == std::string_view::npos) break;
    content.remove_prefix(nl + 1);
  }
  return file;
}

std::string FstabFile::print() const {
  std::string out;
  for (const auto& line : lines_) {
    out += line.text;
    out += line.terminator;
  }
  return out;
}

std::vector<FstabEntry> FstabFile::entries() const {
  std::vector<FstabEntry> out;
  for (const auto& line : lines_) {
    if (line.entry) out.push_back(*line.entry);
  }
  return out;
}

std::vector<std::size_t> FstabFile::find_mount_point(std::string_view file) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    if (lines_[i].entry && lines_[i].entry->file == file) out.push_back(i);
  }
  return out;
}

std::optional<FstabEntry> FstabFile::entry_for(std::string_view file) const {
  auto found = find_mount_point(file);
  if (found.size() != 1) return std::nullopt;
  return lines_[found.front()].entry;
}

bool FstabFile::is_owner_comment(std::size_t index) const {
  return index < lines_.size() && lines_[index].kind == FstabLine::Kind::comment &&
         parse_owner_comment(lines_[index].text).has_value();
}

std::optional<EntryOwner> FstabFile::owner_of(std::string_view file) const {
  auto found = find_mount_point(file);
  if (found.size() != 1 || found.front() == 0 || !is_owner_comment(found.front() - 1)) return std::nullopt;
  return parse_owner_comment(lines_[found.front() - 1].text);
}

Result<std::optional<std::size_t>> FstabFile::unique_entry_index(std::string_view file) const {
  auto found = find_mount_point(file);
  if (found.empty()) return std::optional<std::size_t>{};
  if (found.size() == 1) return std::optional<std::size_t>{found.front()};
  std::string lines;
  for (auto i : found) lines += (lines.empty() ? "" : ", ") + std::to_string(i + 1);
  return fail(std::to_string(found.size()) + " entries mount " + std::string(file) + " (lines " + lines + ")",
              where_ + ":" + std::to_string(found.front() + 1),
              "keep one entry for this mount point by hand; pathwarden will not guess which one counts");
}

std::string FstabFile::terminator_for_new_lines() const {
  for (const auto& line : lines_) {
    if (!line.terminator.empty()) return line.terminator;
  }
  return "\n";
}

void FstabFile::end_last_line(const std::string& eol) {
  if (lines_.empty() || !lines_.back().terminator.empty()) return;
  auto& last = lines_.back();
  last.terminator = eol;
  // "text\r" + "\n" reads back as a CRLF line: keep the model what the bytes will say.
  if (eol == "\n" && last.text.ends_with('\r')) {
    last.text.pop_back();
    last.terminator = "\r\n";
    auto reread = parse_line(last.text, where_, static_cast<int>(lines_.size()));
    last.kind = reread.kind;
    last.entry = std::move(reread.entry);
  }
}

Result<bool> FstabFile::set_entry_spec(std::string_view file, std::string_view spec) {
  auto index = unique_entry_index(file);
  if (!index) return std::unexpected(index.error());
  if (!*index) return false;
  auto& line = lines_[**index];
  if (line.entry->spec == spec) return false;
  if (spec.empty()) return fail("an fstab entry's spec cannot be empty", where_, "");
  const std::size_t start = leading_blanks(line.text).size();
  std::size_t end = start;
  while (end < line.text.size() && !is_blank_char(line.text[end])) ++end;
  std::string text = line.text.substr(0, start) + encode_fstab_field(spec) + line.text.substr(end);
  auto reread = parse_line(text, where_, static_cast<int>(**index) + 1);
  if (!reread.entry || reread.entry->spec != spec || reread.entry->file != line.entry->file) {
    return fail("cannot write '" + std::string(spec) + "' as the spec of " + std::string(file), where_, "");
  }
  line.text = std::move(text);
  line.entry = std::move(reread.entry);
  return true;
}

Result<bool> FstabFile::set_entry(const FstabEntrySpec& spec, const EntryOwner& owner) {
  if (auto valid = validate_entry_spec(spec); !valid) return std::unexpected(valid.error().with_where(where_));
  auto index = unique_entry_index(spec.file);
  if (!index) return std::unexpected(index.error());
  const std::string comment = owner_comment(owner);
  const std::string eol = terminator_for_new_lines();

  if (!*index) {
    end_last_line(eol);
    auto entry_text = format_entry(spec, "", {});
    lines_.push_back(FstabLine{FstabLine::Kind::comment, comment, eol, std::nullopt});
    lines_.push_back(FstabLine{FstabLine::Kind::entry, entry_text, eol, parse_line(entry_text, where_, 0).entry});
    return true;
  }

  std::size_t at = **index;
  bool changed = false;
  auto& line = lines_[at];
  auto entry_text = format_entry(spec, leading_blanks(line.text), separators_of(line.text));
  auto wanted = parse_line(entry_text, where_, 0).entry;
  // An entry that already says the same thing keeps its bytes (and its layout).
  if (!same_meaning(*line.entry, *wanted)) {
    line.text = entry_text;
    line.entry = std::move(wanted);
    changed = true;
  }
  if (at > 0 && is_owner_comment(at - 1)) {
    if (lines_[at - 1].text != comment) {
      lines_[at - 1].text = comment;
      changed = true;
    }
  } else {
    auto terminator = line.terminator.empty() ? eol : line.terminator;
    lines_.insert(lines_.begin() + static_cast<std::ptrdiff_t>(at),
                  FstabLine{FstabLine::Kind::comment, comment, terminator, std::nullopt});
    changed = true;
  }
  return changed;
}

Result<bool> FstabFile::remove_entry(std::string_view file) {
  auto index = unique_entry_index(file);
  if (!index) return std::unexpected(index.error());
  if (!*index) return false;
  std::size_t at = **index;
  bool was_last = at + 1 == lines_.size();
  std::string terminator = lines_[at].terminator;
  lines_.erase(lines_.begin() + static_cast<std::ptrdiff_t>(at));
  if (at > 0 && is_owner_comment(at - 1)) lines_.erase(lines_.begin() + static_cast<std::ptrdiff_t>(at - 1));
  // Keep "no final newline" a property of the file, not of the removed line.
  if (was_last && !lines_.empty() && terminator.empty()) lines_.back().terminator.clear();
  return true;
}

std::vector<FstabLine> FstabFile::entry_block(std::size_t at) const {
  std::vector<FstabLine> block;
  if (at > 0 && is_owner_comment(at - 1)) block.push_back(lines_[at - 1]);
  block.push_back(lines_[at]);
  return block;
}

Result<bool> FstabFile::take_entry(const FstabFile& from, std::string_view file) {
  auto theirs = from.unique_entry_index(file);
  if (!theirs) return std::unexpected(theirs.error());
  auto mine = unique_entry_index(file);
  if (!mine) return std::unexpected(mine.error());
  if (!*theirs) return remove_entry(file);
  auto block = from.entry_block(**theirs);
  if (!*mine) {
    end_last_line(terminator_for_new_lines());
    lines_.insert(lines_.end(), block.begin(), block.end());
    return true;
  }
  const std::size_t at = **mine;
  const std::size_t first = at > 0 && is_owner_comment(at - 1) ? at - 1 : at;
  auto same = [](const std::vector<FstabLine>& a, const std::vector<FstabLine>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const FstabLine& x, const FstabLine& y) {
      return x.text == y.text && x.terminator == y.terminator;
    });
  };
  if (same(entry_block(at), block)) return false;
  const bool was_last = at + 1 == lines_.size();
  lines_.erase(lines_.begin() + static_cast<std::ptrdiff_t>(first),
               lines_.begin() + static_cast<std::ptrdiff_t>(at + 1));
  // The block came from a file where it may have been the last line, without a newline: here a
  // line may follow it, which must not be glued to it.
  if (!was_last && block.back().terminator.empty()) block.back().terminator = terminator_for_new_lines();
  lines_.insert(lines_.begin() + static_cast<std::ptrdiff_t>(first), block.begin(), block.end());
  return true;
}

}  // namespace pw::guest
