// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>

#include "diagnostics/error.hpp"

namespace pw::cli {

// Logs go to stderr so that stdout stays for plans, reports and JSON output.
// format is "text" or "json" (one JSON object per line, for journald/Loki and AWX).
// When stderr is the journal's stream (systemd sets $JOURNAL_STREAM to its device:inode), each
// line starts with its syslog priority, "<4>" for a warning (sd-daemon(3)), so that
// `journalctl -p warning` filters them; colours are off then, with `color` false (--no-color) and
// with $NO_COLOR set, and whenever stderr is not a terminal.
Status configure_logging(const std::string& level, const std::string& format, bool color = true);

// Whether stderr is the stream $JOURNAL_STREAM names.
bool stderr_is_journal();

// A status line redrawn in place on stderr (progress.cpp). While one is registered, every log
// line is written with it out of the way: hide() before (it clears the line and holds it still),
// restore() after (it draws it again below the log line and lets it move), never interleaved.
class TerminalLine {
 public:
  virtual ~TerminalLine() = default;
  virtual void hide() = 0;
  virtual void restore() = 0;
};
void set_terminal_line(TerminalLine* line);  // nullptr: none

}  // namespace pw::cli
