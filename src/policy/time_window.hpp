// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Restart windows: "Sun 02:00-04:00", "Mon-Fri 22:00-06:00", "daily 01:00-05:00", optionally in a
// named IANA time zone ("Sun 02:00-04:00 Europe/Berlin"); without one, the controller's local zone.
// A window is a span of wall-clock time on the named days, so across a DST change it keeps its
// wall-clock bounds: on the spring-forward night 02:00-04:00 Europe/Berlin is one hour long, on
// the fall-back night three. The zone database is the system's (/usr/share/zoneinfo, through
// date/tz.h), read when the window is parsed; deciding is pure arithmetic on a time given in.
#include <array>
#include <chrono>
#include <string>
#include <string_view>

#include "diagnostics/error.hpp"

namespace date {
class time_zone;
}

namespace pw::policy {

struct TimeWindow {
  std::array<bool, 7> days{};  // index 0 = Sunday, as in std::tm::tm_wday
  int start_minute = 0;        // minutes after midnight
  int end_minute = 0;
  const date::time_zone* zone = nullptr;  // nullptr: the zone the caller calls local
  std::string text;                       // as written, for messages and plan files

  // Whether a local time (weekday 0=Sunday, minute of day) falls inside the window. A window
  // that wraps midnight belongs to the day it starts on.
  bool contains(int weekday, int minute_of_day) const;
  // Whether instant `t` falls inside, read in the window's zone, or in `local` when it names none
  // (nullptr: UTC).
  bool contains(std::chrono::system_clock::time_point t, const date::time_zone* local) const;
  // "Mon 10:12 Europe/Berlin": `t` as the window reads it, for messages.
  std::string describe(std::chrono::system_clock::time_point t, const date::time_zone* local) const;
};

Result<TimeWindow> parse_time_window(std::string_view text);

// An IANA zone of the system's database, with a did-you-mean when there is none of that name.
Result<const date::time_zone*> time_zone_named(std::string_view name);

// The controller's local zone (TZ, else /etc/localtime); nullptr (UTC) when it cannot be read.
const date::time_zone* controller_zone();

}  // namespace pw::policy
