#include "diagnostics/error.hpp"

namespace pw {

std::string SourcePos::to_string() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Error::to_string() const {
  std::string out;
  if (!where.empty()) out = where + ": ";
  out += what;
  if (!hint.empty()) out += " (" + hint + ")";
  return out;
}

std::string Diagnostic::to_string() const { return pos.to_string() + ": " + message; }

}  // namespace pw
