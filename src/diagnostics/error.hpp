// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Expected failures are values: every fallible operation returns Result<T>. An Error tells the
// user what is wrong, where, and what to do about it.
#include <expected>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pw {

// A position in a text file, 1-based like compilers print it; line 0 means "the whole file".
struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;

  std::string to_string() const;  // "file:line:col" (or "file" when line is 0)
  friend bool operator==(const SourcePos&, const SourcePos&) = default;
};

struct Error {
  std::string what;   // what is wrong
  std::string where;  // file:line:col, URL, host, policy name...
  std::string hint;   // what to do about it; may be empty

  // "where: what (hint)"; the form every user-facing message takes.
  std::string to_string() const;

  Error with_where(std::string w) const& {
    Error e = *this;
    e.where = std::move(w);
    return e;
  }
  Error with_hint(std::string h) const& {
    Error e = *this;
    e.hint = std::move(h);
    return e;
  }
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(std::string what, std::string where = {}, std::string hint = {}) {
  return std::unexpected<Error>(Error{std::move(what), std::move(where), std::move(hint)});
}

// One finding of a validation pass, printed as "file:line:col: message".
struct Diagnostic {
  SourcePos pos;
  std::string message;

  std::string to_string() const;
  friend bool operator==(const Diagnostic&, const Diagnostic&) = default;
};

using Diagnostics = std::vector<Diagnostic>;

// Text that came from outside (a file name, a guest's stderr, a VM name from the API) made safe
// for one terminal or log line: C0 controls (but tab) and DEL become "\xNN", so nobody can forge
// another line or send escape sequences to a terminal, a log or journald.
std::string escape_controls(std::string_view text);

}  // namespace pw
