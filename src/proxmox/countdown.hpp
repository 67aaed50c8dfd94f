// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A completion that many callbacks share (the client's batched reads, the agent conversations);
// the waiter owns it only through shared_ptr, so a callback that ends late finds it alive.
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace pw::proxmox {

struct Countdown {
  std::mutex mutex;
  std::condition_variable cv;
  std::size_t left = 0;

  void done() {
    std::lock_guard lock(mutex);
    if (--left == 0) cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return left == 0; });
  }
};

}  // namespace pw::proxmox
