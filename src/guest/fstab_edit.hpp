// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How a new fstab reaches the guest without its content on any command line.
//
// The apply script's arguments travel in the SSH command (base64, but readable by anyone who
// decodes what `ps` shows, on the controller and in the guest). The whole new file used to be
// one of them, and with it every line other tools wrote: a CIFS entry's `password=`. Instead
// the file travels as an edit of the observed one: byte ranges the guest copies from the
// observed bytes it holds (the backup it has just checked), and the text of the lines that are
// new. Every line of the new file that the observed file already holds is a copy, so what
// travels is only what pathwarden itself wrote (its entries and their owner comments); the
// guest checks the assembled file's SHA-256 against the planned one before it is put in place.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pw::guest {

struct EditPiece {
  enum class Kind : std::uint8_t { copy, text };
  Kind kind = Kind::copy;
  std::uint64_t offset = 0;  // copy: bytes [offset, offset + length) of the observed file
  std::uint64_t length = 0;
  std::string text;  // text: these bytes
  bool operator==(const EditPiece&) const = default;
};

// Pieces that make `wanted` out of `observed`; adjacent copies and texts are merged.
std::vector<EditPiece> fstab_edit(std::string_view observed, std::string_view wanted);

// What the pieces make of `observed` (what the guest's script does, for tests and stand-ins).
std::string apply_edit(std::string_view observed, const std::vector<EditPiece>& pieces);

// The pieces as the apply script reads them: "c" OFFSET LENGTH, or "t" TEXT.
std::vector<std::string> edit_argv(const std::vector<EditPiece>& pieces);

}  // namespace pw::guest
