// SPDX-License-Identifier: GPL-3.0-or-later
// The fstab model must never lose or corrupt a guest's /etc/fstab:
//  - parse + print gives back the input byte for byte, whatever the bytes;
//  - set_entry / remove_entry change only the owned entry and its pathwarden comment (plus a
//    final newline on a last line that had none); every other line keeps its bytes and order;
//  - what set_entry writes reads back as the spec it was given, and setting it again is a no-op;
//  - a refused edit leaves the file as it was.
// Input: the fstab text, then optionally a NUL byte and a stream of edits (see apply_edits).
// Without edits, edits are derived from the file's own entries.
#include "guest/fstab.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "guest/tokens.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;
using guest::FstabFile;
using guest::FstabLine;

std::string join(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : ",") + o;
  return out.empty() ? "defaults" : out;
}

bool is_plain_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  });
}

// The lines an edit of `file` may touch: its entries and the pathwarden comments right above them.
std::vector<bool> touchable(const FstabFile& f, std::string_view file) {
  const auto& lines = f.lines();
  std::vector<bool> out(lines.size(), false);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].entry && lines[i].entry->file == file) {
      out[i] = true;
      if (i > 0 && lines[i - 1].kind == FstabLine::Kind::comment && guest::parse_owner_comment(lines[i - 1].text)) {
        out[i - 1] = true;
      }
    }
  }
  return out;
}

void check_others_untouched(const FstabFile& before, const FstabFile& after, std::string_view file) {
  auto keep_before = touchable(before, file);
  auto keep_after = touchable(after, file);
  std::vector<const FstabLine*> a, b;
  for (std::size_t i = 0; i < before.lines().size(); ++i) {
    if (!keep_before[i]) a.push_back(&before.lines()[i]);
  }
  for (std::size_t i = 0; i < after.lines().size(); ++i) {
    if (!keep_after[i]) b.push_back(&after.lines()[i]);
  }
  const std::string context = "editing " + fuzz::printable(file) + "\n  before: " + fuzz::printable(before.print()) +
                              "\n  after:  " + fuzz::printable(after.print());
  PW_FUZZ_CHECK(a.size() == b.size(), context);
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Only the file's last line may gain a line end (so new lines can follow it): its bytes are
    // the old ones plus "\n" or "\r\n".
    if (a[i] == &before.lines().back() && a[i]->terminator.empty() && !b[i]->terminator.empty()) {
      const auto bytes = b[i]->text + b[i]->terminator;
      PW_FUZZ_CHECK(bytes == a[i]->text + "\n" || bytes == a[i]->text + "\r\n", context);
      continue;
    }
    PW_FUZZ_CHECK(a[i]->text == b[i]->text && a[i]->kind == b[i]->kind && a[i]->terminator == b[i]->terminator,
                  context);
  }
}

// The in-memory model after an edit is what a fresh parse of its bytes gives.
void check_model_matches_bytes(const FstabFile& f) {
  const auto printed = f.print();
  const auto reread = FstabFile::parse(printed, f.where());
  PW_FUZZ_CHECK(reread.print() == printed, fuzz::printable(printed));
  PW_FUZZ_CHECK(reread.lines().size() == f.lines().size(), fuzz::printable(printed));
  for (std::size_t i = 0; i < f.lines().size(); ++i) {
    const auto& x = f.lines()[i];
    const auto& y = reread.lines()[i];
    PW_FUZZ_CHECK(x.kind == y.kind && x.entry == y.entry && x.text == y.text && x.terminator == y.terminator,
                  "line " + std::to_string(i + 1) + " of " + fuzz::printable(printed));
  }
}

void set_entry(FstabFile& f, const guest::FstabEntrySpec& spec, const guest::EntryOwner& owner) {
  const FstabFile before = f;
  auto changed = f.set_entry(spec, owner);
  if (!changed) {
    PW_FUZZ_CHECK_ERROR(changed.error());
    PW_FUZZ_CHECK(f.print() == before.print(), "a refused set_entry changed the file: " + changed.error().to_string());
    return;
  }
  PW_FUZZ_CHECK(*changed || f.print() == before.print(), "set_entry said 'unchanged' but changed the bytes");
  check_model_matches_bytes(f);
  check_others_untouched(before, f, spec.file);

  const auto reread = FstabFile::parse(f.print());
  const auto entry = reread.entry_for(spec.file);
  const std::string context = "after set_entry: " + fuzz::printable(f.print());
  PW_FUZZ_CHECK(entry.has_value(), context);
  PW_FUZZ_CHECK(entry->spec == spec.spec && entry->file == spec.file && entry->vfstype == spec.vfstype, context);
  PW_FUZZ_CHECK(entry->options == join(spec.options), context);
  PW_FUZZ_CHECK(entry->dump.value_or(0) == spec.dump && entry->pass.value_or(0) == spec.pass, context);
  const auto got_owner = reread.owner_of(spec.file);
  PW_FUZZ_CHECK(got_owner.has_value(), context);
  // Policy names are plain names (the policy loader enforces it); those come back exactly.
  if (is_plain_name(owner.policy)) PW_FUZZ_CHECK(got_owner->policy == owner.policy, context);

  const auto settled = f.print();
  auto again = f.set_entry(spec, owner);
  PW_FUZZ_CHECK(again.has_value() && !*again && f.print() == settled, "set_entry twice is not a no-op: " + context);
}

void remove_entry(FstabFile& f, std::string_view file) {
  const FstabFile before = f;
  auto removed = f.remove_entry(file);
  if (!removed) {
    PW_FUZZ_CHECK_ERROR(removed.error());
    PW_FUZZ_CHECK(f.print() == before.print(), "a refused remove_entry changed the file");
    return;
  }
  check_model_matches_bytes(f);
  PW_FUZZ_CHECK(f.find_mount_point(file).empty(), "entry still there after remove_entry");
  PW_FUZZ_CHECK(*removed || f.print() == before.print(), "remove_entry said 'unchanged' but changed the bytes");
  // Removing may move "no final newline" to the new last line; compare everything else.
  const auto touched = touchable(before, file);
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < before.lines().size(); ++i) {
    if (!touched[i]) kept.push_back(before.lines()[i].text);
  }
  std::vector<std::string> now;
  for (const auto& l : f.lines()) now.push_back(l.text);
  PW_FUZZ_CHECK(kept == now, "remove_entry touched other lines: " + fuzz::printable(f.print()));
}

// Edits from the byte stream: op, then length-prefixed fields.
void apply_edits(FstabFile& f, fuzz::Pieces& in) {
  for (int n = 0; n < 8 && !in.empty(); ++n) {
    const auto op = in.byte() % 3;
    const auto existing = f.entries();
    std::string file;
    if (op == 2 && !existing.empty()) {
      file = existing[in.byte() % existing.size()].file;  // an entry that is there
    } else {
      file = std::string(in.text(64));
    }
    if (op == 1) {
      remove_entry(f, file);
      continue;
    }
    guest::FstabEntrySpec spec;
    spec.spec = std::string(in.text(64));
    spec.file = file;
    spec.vfstype = std::string(in.text(16));
    const auto option_count = in.byte() % 5;
    for (int i = 0; i < option_count; ++i) spec.options.emplace_back(in.text(32));
    spec.dump = static_cast<std::int8_t>(in.byte());
    spec.pass = static_cast<std::int8_t>(in.byte());
    guest::EntryOwner owner{std::string(in.text(32)), std::string(in.text(128))};
    set_entry(f, spec, owner);
  }
}

// Edits a real run would make: take over the first entry with new options, add a new mount.
void derived_edits(FstabFile& f) {
  const auto entries = f.entries();
  if (!entries.empty() && !entries.front().file.empty()) {
    const auto& e = entries.front();
    guest::FstabEntrySpec spec{e.spec.empty() ? "x" : e.spec,       e.file, e.vfstype.empty() ? "nfs" : e.vfstype,
                               {"vers=3", "nconnect=8", "_netdev"}, 0,      0};
    set_entry(f, spec, {"fuzz-policy", "pinned: trunking"});
  }
  set_entry(f, {"198.51.100.2:/srv/nas/movies", "/mnt/fuzz", "nfs", {"vers=4.2"}, 0, 0}, {"fuzz-new", ""});
  remove_entry(f, "/mnt/fuzz");
}

void check_field_codec(std::string_view value) {
  const auto encoded = guest::encode_fstab_field(value);
  PW_FUZZ_CHECK(encoded.find_first_of(" \t\n\r") == std::string::npos, fuzz::printable(encoded));
  PW_FUZZ_CHECK(guest::decode_octal_escapes(encoded) == value,
                fuzz::printable(value) + " -> " + fuzz::printable(encoded));
}

void one_input(const std::uint8_t* data, std::size_t size) {
  fuzz::Pieces in(data, size);
  const auto content = in.until(std::string_view("\0", 1));
  const bool has_edits = !in.empty();

  auto file = FstabFile::parse(content, "fuzz:/etc/fstab");
  PW_FUZZ_CHECK(file.print() == content, "round trip is not byte-exact: " + fuzz::printable(content));
  for (const auto& d : file.diagnostics()) {
    PW_FUZZ_CHECK(!d.message.empty() && d.pos.line >= 1 && d.pos.column >= 1, d.to_string());
  }
  for (const auto& line : file.lines()) {
    PW_FUZZ_CHECK((line.kind == FstabLine::Kind::entry) == line.entry.has_value(), fuzz::printable(line.text));
  }
  check_field_codec(content.substr(0, 256));

  if (has_edits) {
    apply_edits(file, in);
  } else {
    derived_edits(file);
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
