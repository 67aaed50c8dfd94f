// SPDX-License-Identifier: GPL-3.0-or-later
#include "stop_signals.hpp"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <initializer_list>

namespace pw::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;

// Only async-signal-safe calls here: write(2), signal(2), raise(3).
void on_stop_signal(int sig) {
  if (g_stop != 0) {
    constexpr char kNow[] =
        "pathwarden: second stop signal: stopping at once; run 'pathwarden recover' to finish what was begun\n";
    (void)!::write(STDERR_FILENO, kNow, sizeof kNow - 1);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop = sig;
  constexpr char kSoon[] =
      "pathwarden: stop requested: stopping at the next safe point and undoing what was begun "
      "(again to stop at once)\n";
  (void)!::write(STDERR_FILENO, kSoon, sizeof kSoon - 1);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the child-process loop and file I/O go on; the flag is polled
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

int stop_signal() {
  return g_stop;
}

}  // namespace pw::cli
