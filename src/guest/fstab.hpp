// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// /etc/fstab as a list of lines: every line is kept exactly as read, so printing an unchanged file
// gives back the same bytes. Only the entry a policy owns is ever rewritten, and it carries a
// comment naming the policy and why its options are what they are.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

// One mount line with its fields decoded (\040 → space) the way mount(8) reads them.
struct FstabEntry {
  std::string spec;         // UUID=..., LABEL=..., server:/export, /dev/sda1, tmpfs
  std::string file;         // the mount point
  std::string vfstype;      // nfs, nfs4, ext4, swap...
  std::string options;      // as written; "defaults" when the field is missing
  std::optional<int> dump;  // missing fields stay missing (mount treats them as 0)
  std::optional<int> pass;

  std::vector<std::string> option_list() const;
  friend bool operator==(const FstabEntry&, const FstabEntry&) = default;
};

struct FstabLine {
  enum class Kind { blank, comment, entry, malformed };
  Kind kind = Kind::blank;
  std::string text;                 // the line as read, without its terminator
  std::string terminator;           // "\n", "\r\n", or "" for a last line without one
  std::optional<FstabEntry> entry;  // set for Kind::entry
};

// The entry a policy wants; fields are plain values, escaped when printed.
struct FstabEntrySpec {
  std::string spec;
  std::string file;
  std::string vfstype;
  std::vector<std::string> options;  // joined with ','; empty means "defaults"
  int dump = 0;
  int pass = 0;
};

// Who owns an entry and why; printed as the comment line right above it.
struct EntryOwner {
  std::string policy;
  std::string reason;
  friend bool operator==(const EntryOwner&, const EntryOwner&) = default;
};

class FstabFile {
 public:
  // Never fails: lines mount(8) could not read either are kept verbatim and reported in
  // diagnostics() as "where:line:col: ...".
  static FstabFile parse(std::string_view content, std::string where = "/etc/fstab");

  std::string print() const;

  const std::vector<FstabLine>& lines() const { return lines_; }
  const Diagnostics& diagnostics() const { return diagnostics_; }
  const std::string& where() const { return where_; }

  std::vector<FstabEntry> entries() const;
  // Line indices (0-based) of the entries mounted on `file`.
  std::vector<std::size_t> find_mount_point(std::string_view file) const;
  std::optional<FstabEntry> entry_for(std::string_view file) const;
  // The owner named by the pathwarden comment above the entry of `file`, if any.
  std::optional<EntryOwner> owner_of(std::string_view file) const;

  // Makes the entry of spec.file equal to spec, owned by `owner`; touches no other line except
  // adding a final newline to a last line that had none. Returns whether anything changed.
  // Fails when the spec is not writable or the mount point has several entries.
  Result<bool> set_entry(const FstabEntrySpec& spec, const EntryOwner& owner);
  // Replaces only the first field (spec) of the entry of `file`, every other byte of the line and
  // the lines around it kept: a hand-written entry pointed at another address of its NAS stays
  // the operator's. Returns whether anything changed; false too when `file` has no entry.
  Result<bool> set_entry_spec(std::string_view file, std::string_view spec);
  // Removes the entry of `file` and its pathwarden comment. Returns whether anything changed.
  Result<bool> remove_entry(std::string_view file);
  // Makes the lines of `file` here (its entry and the pathwarden comment above it) what they are
  // in `from`, byte for byte: replaced where they stand, added at the end, or removed; no other
  // line changes. Several policies' entries on one guest are composed into one write this way, and
  // one policy's entry is put back alone (from the fstab as it was before) while the others stay.
  Result<bool> take_entry(const FstabFile& from, std::string_view file);

 private:
  std::string terminator_for_new_lines() const;
  // Gives a last line without a newline one, so that lines can follow it.
  void end_last_line(const std::string& eol);
  // The entry at `at` with the pathwarden comment above it, if it has one.
  std::vector<FstabLine> entry_block(std::size_t at) const;
  Result<std::optional<std::size_t>> unique_entry_index(std::string_view file) const;
  bool is_owner_comment(std::size_t index) const;

  std::vector<FstabLine> lines_;
  Diagnostics diagnostics_;
  std::string where_;
};

// Mount options as fstab's fourth field and mount -o take them: comma-joined, "defaults" for none.
std::string join_options(const std::vector<std::string>& options);
// Escapes a field for fstab: whitespace, backslash and a leading '#' become octal escapes.
std::string encode_fstab_field(std::string_view value);
// The comment line (without terminator) that marks an owned entry.
std::string owner_comment(const EntryOwner& owner);
std::optional<EntryOwner> parse_owner_comment(std::string_view line);
// Checks that a spec can be written as one fstab entry; the error names the bad field.
Status validate_entry_spec(const FstabEntrySpec& spec);

}  // namespace pw::guest
