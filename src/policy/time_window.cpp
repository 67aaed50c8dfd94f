// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/time_window.hpp"

#include <date/tz.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <vector>

#include "diagnostics/suggest.hpp"
#include "policy/text.hpp"

namespace pw::policy {
namespace {

constexpr std::array<std::string_view, 7> kDayNames{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

std::optional<int> day_index(std::string_view s) {
  for (std::size_t i = 0; i < kDayNames.size(); ++i) {
    if (s.size() == 3 && std::equal(s.begin(), s.end(), kDayNames[i].begin(),
                                    [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

std::optional<int> clock_minutes(std::string_view s) {
  // HH:MM, 00:00..24:00
  if (s.size() != 5 || s[2] != ':') return std::nullopt;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!digit(s[0]) || !digit(s[1]) || !digit(s[3]) || !digit(s[4])) return std::nullopt;
  const int h = (s[0] - '0') * 10 + (s[1] - '0');
  const int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (h > 24 || m > 59 || (h == 24 && m != 0)) return std::nullopt;
  return h * 60 + m;
}

struct LocalClock {
  int weekday = 0;
  int minute_of_day = 0;
};

LocalClock local_clock(std::chrono::system_clock::time_point t, const date::time_zone* zone) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto local = zone != nullptr ? zone->to_local(secs) : date::local_seconds(secs.time_since_epoch());
  const auto day = date::floor<date::days>(local);
  const auto since_midnight = std::chrono::duration_cast<std::chrono::minutes>(local - day);
  return {static_cast<int>(date::weekday(day).c_encoding()), static_cast<int>(since_midnight.count())};
}

}  // namespace

Result<const date::time_zone*> time_zone_named(std::string_view name) {
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    std::vector<std::string> names;
    try {
      for (const auto& z : date::get_tzdb().zones) names.emplace_back(z.name());
    } catch (const std::exception&) {
      return fail("time zone '" + std::string(name) + "' cannot be looked up: the zone database is unreadable", {},
                  "install Debian's tzdata (/usr/share/zoneinfo)");
    }
    std::vector<std::string_view> views(names.begin(), names.end());
    return fail("unknown time zone '" + std::string(name) + "'" + did_you_mean(name, views), {},
                "use an IANA zone name such as Europe/Berlin or UTC (timedatectl list-timezones)");
  }
}

bool TimeWindow::contains(int weekday, int minute_of_day) const {
  if (start_minute == end_minute) return days[static_cast<std::size_t>(weekday)];  // whole day
  if (start_minute < end_minute) {
    return days[static_cast<std::size_t>(weekday)] && minute_of_day >= start_minute && minute_of_day < end_minute;
  }
  // Wraps midnight: the evening part belongs to today, the morning part to yesterday's window.
  if (minute_of_day >= start_minute) return days[static_cast<std::size_t>(weekday)];
  if (minute_of_day < end_minute) return days[static_cast<std::size_t>((weekday + 6) % 7)];
  return false;
}

bool TimeWindow::contains(std::chrono::system_clock::time_point t, const date::time_zone* local) const {
  const auto c = local_clock(t, zone != nullptr ? zone : local);
  return contains(c.weekday, c.minute_of_day);
}

std::string TimeWindow::describe(std::chrono::system_clock::time_point t, const date::time_zone* local) const {
  const auto* z = zone != nullptr ? zone : local;
  const auto c = local_clock(t, z);
  char hm[32];
  std::snprintf(hm, sizeof hm, "%02d:%02d", c.minute_of_day / 60, c.minute_of_day % 60);
  return std::string(kDayNames[static_cast<std::size_t>(c.weekday)]) + " " + hm + " " +
         (z != nullptr ? std::string(z->name()) : std::string("UTC"));
}

Result<TimeWindow> parse_time_window(std::string_view text) {
  static const std::string kHint =
      "write e.g. 'Sun 02:00-04:00', 'Mon-Fri 22:00-02:00', 'daily 01:00-05:00' or 'Sun 02:00-04:00 Europe/Berlin'";
  TimeWindow w;
  w.text = std::string(text);
  std::string_view s = trim_blanks(text);
  const auto space = s.find(' ');
  if (space == std::string_view::npos) return fail("time window '" + w.text + "' has no days", {}, kHint);
  const std::string_view days = s.substr(0, space);
  std::string_view hours = trim_blanks(s.substr(space + 1));
  std::string_view zone;
  if (const auto z = hours.find_first_of(" \t"); z != std::string_view::npos) {
    zone = trim_blanks(hours.substr(z));
    hours = hours.substr(0, z);
  }
  if (days == "daily" || days == "Daily") {
    w.days.fill(true);
  } else {
    std::size_t pos = 0;
    while (pos <= days.size()) {
      const auto comma = days.find(',', pos);
      const std::string_view part =
          days.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
      const auto dash = part.find('-');
      const auto first = day_index(part.substr(0, dash));
      const auto last = dash == std::string_view::npos ? first : day_index(part.substr(dash + 1));
      if (!first || !last) {
        return fail("'" + std::string(part) + "' in time window '" + w.text + "' is not a day or day range", {},
                    "days are Sun Mon Tue Wed Thu Fri Sat, ranges like Mon-Fri, lists like Sat,Sun, or 'daily'");
      }
      for (int d = *first;; d = (d + 1) % 7) {
        w.days[static_cast<std::size_t>(d)] = true;
        if (d == *last) break;
      }
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
  }
  const auto dash = hours.find('-');
  const auto start = dash == std::string_view::npos ? std::nullopt : clock_minutes(trim_blanks(hours.substr(0, dash)));
  const auto end = dash == std::string_view::npos ? std::nullopt : clock_minutes(trim_blanks(hours.substr(dash + 1)));
  if (!start || !end) {
    return fail("'" + std::string(hours) + "' in time window '" + w.text + "' is not a time range HH:MM-HH:MM", {},
                kHint);
  }
  w.start_minute = *start % (24 * 60);
  w.end_minute = *end % (24 * 60);
  if (*start == *end) return fail("time window '" + w.text + "' is empty (start equals end)", {}, kHint);
  if (!zone.empty()) {
    auto z = time_zone_named(zone);
    if (!z) return std::unexpected(z.error());
    w.zone = *z;
  }
  return w;
}

const date::time_zone* controller_zone() {
  // date's current_zone() reads /etc/localtime only; TZ (set by an operator or a unit's
  // Environment=) comes first, as for localtime(3).
  if (const char* tz = std::getenv("TZ"); tz != nullptr && *tz != '\0') {
    std::string_view name = tz;
    if (name.front() == ':') name.remove_prefix(1);
    try {
      return date::locate_zone(name);
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  try {
    return date::current_zone();
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace pw::policy
