// SPDX-License-Identifier: GPL-3.0-or-later
#include "timing/sleeper.hpp"

#include <thread>

namespace pw::timing {

void RealSleeper::sleep(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
}

Sleeper& real_sleeper() {
  static RealSleeper s;
  return s;
}

}  // namespace pw::timing
