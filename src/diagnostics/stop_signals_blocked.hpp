// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The threads a pathwarden process starts never take its stop signals (SIGTERM, SIGINT, SIGHUP):
// the main thread does, so the handler's flag is set on the thread that polls it, before that
// thread runs another instruction of its work. A process-directed signal goes to any thread that
// does not block it; taken by the HTTPS I/O thread, the flag would be set concurrently with the
// main thread's work, which could begin one more step (and the reliability test that stops a run
// right after its first journal record would see it). Hold one while creating a thread: the new
// thread inherits the blocked mask; the creator's own mask is restored when it goes.
#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace pw {

class StopSignalsBlocked {
 public:
  StopSignalsBlocked() {
    sigset_t stop;
    sigemptyset(&stop);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, sig);
    pthread_sigmask(SIG_BLOCK, &stop, &previous_);
  }
  ~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t previous_{};
};

// A std::thread that never takes the stop signals.
template <class F>
std::thread thread_without_stop_signals(F&& f) {
  const StopSignalsBlocked blocked;
  return std::thread(std::forward<F>(f));
}

}  // namespace pw
