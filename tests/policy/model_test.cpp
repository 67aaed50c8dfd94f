// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/model.hpp"

#include <catch2/catch.hpp>

using namespace pw::policy;

TEST_CASE("byte sizes take binary and decimal units") {
  CHECK(parse_byte_size("256MiB").value() == 256ull << 20);
  CHECK(parse_byte_size("1GiB").value() == 1ull << 30);
  CHECK(parse_byte_size("64MB").value() == 64'000'000ull);
  CHECK(parse_byte_size("1048576").value() == 1048576ull);
  CHECK(parse_byte_size("1.5KiB").value() == 1536ull);
  CHECK_FALSE(parse_byte_size("0.5B").has_value());
  CHECK_FALSE(parse_byte_size("MiB").has_value());
  CHECK_FALSE(parse_byte_size("-1MiB").has_value());
  CHECK_FALSE(parse_byte_size("99999999999TiB").has_value());
  auto typo = parse_byte_size("64Mib");
  REQUIRE_FALSE(typo.has_value());
  CHECK(typo.error().what == "unknown size unit 'Mib', did you mean 'MiB'?");
}

TEST_CASE("durations") {
  CHECK(parse_duration("500ms").value().count() == 500);
  CHECK(parse_duration("30s").value().count() == 30'000);
  CHECK(parse_duration("2m").value().count() == 120'000);
  CHECK(parse_duration("1h").value().count() == 3'600'000);
  CHECK_FALSE(parse_duration("30").has_value());
  CHECK_FALSE(parse_duration("1d").has_value());
}

TEST_CASE("time windows") {
  constexpr int kSun = 0, kMon = 1, kSat = 6;
  auto sun = parse_time_window("Sun 02:00-04:00").value();
  CHECK(sun.contains(kSun, 2 * 60));
  CHECK(sun.contains(kSun, 3 * 60 + 59));
  CHECK_FALSE(sun.contains(kSun, 4 * 60));
  CHECK_FALSE(sun.contains(kMon, 3 * 60));

  // Wrapping midnight: Friday 22:00 to Saturday 02:00 belongs to Friday's window.
  auto nights = parse_time_window("Mon-Fri 22:00-02:00").value();
  CHECK(nights.contains(5, 23 * 60));
  CHECK(nights.contains(kSat, 60));
  CHECK_FALSE(nights.contains(kSat, 23 * 60));
  CHECK_FALSE(nights.contains(kMon, 60));  // Sunday night is not in the window

  auto weekend = parse_time_window("Sat,Sun 00:00-24:00").value();
  CHECK(weekend.contains(kSat, 0));
  CHECK(weekend.contains(kSun, 24 * 60 - 1));
  CHECK_FALSE(weekend.contains(kMon, 12 * 60));

  auto daily = parse_time_window("daily 01:00-05:00").value();
  for (int d = 0; d < 7; ++d) CHECK(daily.contains(d, 90));

  CHECK_FALSE(parse_time_window("Sunday 02:00-04:00").has_value());
  CHECK_FALSE(parse_time_window("Sun 2-4").has_value());
  CHECK_FALSE(parse_time_window("Sun 02:00-02:00").has_value());
  CHECK_FALSE(parse_time_window("Sun 25:00-26:00").has_value());
  CHECK_FALSE(parse_time_window("02:00-04:00").has_value());
  auto unknown = parse_time_window("Sun 02:00-04:00 Europe/Berlln");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().what == "unknown time zone 'Europe/Berlln', did you mean 'Europe/Berlin'?");
}

TEST_CASE("mount spec helpers read the effective version and nconnect") {
  MountSpec m;
  m.options = {{"vers", "3"}, {"nconnect", "8"}, {"_netdev", std::nullopt}};
  CHECK(m.nfs_version() == "3");
  CHECK(m.nconnect() == 8);
  CHECK(m.options_string() == "vers=3,nconnect=8,_netdev");
  m.options = {{"nfsvers", "4.2"}};
  CHECK(m.nfs_version() == "4.2");
  CHECK_FALSE(m.nconnect().has_value());
}

TEST_CASE("a window in a named zone holds its wall-clock bounds across DST changes") {
  using namespace std::chrono;
  auto at = [](int y, unsigned m, unsigned d, int h, int min) {
    return sys_days{year{y} / month{m} / day{d}} + hours(h) + minutes(min);
  };
  auto w = parse_time_window("Sun 02:00-04:00 Europe/Berlin").value();
  // Spring forward, Sunday 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00 UTC, so the window
  // is 03:00-04:00 CEST there, one hour: 01:00-02:00 UTC.
  CHECK_FALSE(w.contains(at(2026, 3, 29, 0, 59), nullptr));  // 01:59 CET
  CHECK(w.contains(at(2026, 3, 29, 1, 0), nullptr));         // 03:00 CEST
  CHECK(w.contains(at(2026, 3, 29, 1, 59), nullptr));        // 03:59 CEST
  CHECK_FALSE(w.contains(at(2026, 3, 29, 2, 0), nullptr));   // 04:00 CEST
  // Fall back, Sunday 2026-10-25: 03:00 CEST goes back to 02:00 CET at 01:00 UTC; 02:00-04:00
  // is 00:00-03:00 UTC, three hours (the hour 02:00-03:00 happens twice).
  CHECK_FALSE(w.contains(at(2026, 10, 24, 23, 59), nullptr));  // 01:59 CEST
  CHECK(w.contains(at(2026, 10, 25, 0, 0), nullptr));          // 02:00 CEST
  CHECK(w.contains(at(2026, 10, 25, 1, 30), nullptr));         // 02:30 CET, the second time
  CHECK(w.contains(at(2026, 10, 25, 2, 59), nullptr));         // 03:59 CET
  CHECK_FALSE(w.contains(at(2026, 10, 25, 3, 0), nullptr));    // 04:00 CET
  CHECK(w.describe(at(2026, 10, 25, 1, 30), nullptr) == "Sun 02:30 Europe/Berlin");
  // Without a zone, the caller's local one (here UTC) is used, as the controller's before.
  auto plain = parse_time_window("Sun 02:00-04:00").value();
  CHECK(plain.contains(at(2026, 10, 25, 2, 0), nullptr));
  const auto* berlin = time_zone_named("Europe/Berlin").value();
  CHECK(plain.contains(at(2026, 10, 25, 0, 30), berlin));       // 02:30 CEST
  CHECK_FALSE(plain.contains(at(2026, 10, 25, 3, 0), berlin));  // 04:00 CET
  CHECK_FALSE(time_zone_named("Mars/Olympus_Mons"));
}
