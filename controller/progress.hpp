#pragma once
#include "reconcile/engine.hpp"

namespace pw::cli {

// On a terminal (stderr is a TTY and the output is text), long steps show a live line with
// what is happening, the elapsed time and, for probes, bytes, expected rate and ETA. Elsewhere
// (JSON output, pipes, journald) it stays silent.
reconcile::ProgressSink progress_sink(bool text_output);

}  // namespace pw::cli
