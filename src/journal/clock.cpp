// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/clock.hpp"

#include <cstdio>
#include <ctime>

namespace pw::journal {

std::string format_utc(TimePoint t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch());
  auto secs = duration_cast<seconds>(ms);
  auto frac = ms - secs;
  if (frac.count() < 0) {  // before 1970: keep the fraction positive
    secs -= seconds(1);
    frac += seconds(1);
  }
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];  // room for any int the compiler cannot rule out
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(frac.count()));
  return buf;
}

}  // namespace pw::journal
