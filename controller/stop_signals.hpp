// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// SIGTERM (systemd's stop, TimeoutStartSec), SIGINT (Ctrl-C) and SIGHUP during a run. The first
// asks the run to stop at its next safe point (the engine asks stop_signal() between phases,
// probe rounds and observe batches): what it began is rolled back, the journal is finished, the
// exit code is 128 + the signal (143, 130). A second one ends the process at once with the
// signal's default action, leaving the journal for `pathwarden recover`; a line on stderr says so.
// Ansible's processes run in process groups of their own, so a terminal's Ctrl-C reaches only
// pathwarden and the phase under way finishes (or times out) before the stop.
namespace pw::cli {

// Installed once the engine exists: before that, a signal ends the process as usual (nothing
// was started that needs finishing).
void install_stop_handlers();

// The first stop signal received, 0 for none.
int stop_signal();

}  // namespace pw::cli
