// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "reconcile/engine.hpp"

namespace pw::cli {

// What a run shows while it works (reconcile/progress.hpp): on a terminal with text output, one
// line on stderr redrawn in place (activity, guests done of total, bytes probed, a reboot waited
// for, elapsed); elsewhere (JSON output, pipes, journald, AWX) an info log line at each new
// activity and one a minute while it lasts, so a scheduled run's journal shows where it is.
// Never on stdout, which is the report's. Warnings are logged in every mode.
reconcile::ProgressSink progress_sink(bool text_output);

}  // namespace pw::cli
