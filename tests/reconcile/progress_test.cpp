// SPDX-License-Identifier: GPL-3.0-or-later
// What a run tells while it works (issue 41 item 1): the events the engine sends, and the one
// picture the controller shows of them, with time as a value (no test waits a minute).
#include "reconcile/progress.hpp"

#include <catch2/catch.hpp>

#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;
using reconcile::Activity;
using reconcile::ProgressEvent;
using reconcile::ProgressTracker;
using namespace std::chrono_literals;

namespace {
std::vector<ProgressEvent> reconcile_events(SeedWorld& w) {
  std::vector<ProgressEvent> events;
  reconcile::Engine engine({w.pve, w.guests, w.journals, w.locks, w.results, w.clock, w.sleeper,
                            [&](const ProgressEvent& e) { events.push_back(e); }},
                           {});
  auto rep = engine.reconcile(movies_policy("[vers=3, nconnect=8, _netdev]"), false);
  INFO(text(rep));
  REQUIRE(rep.policies[0].verdict == report::Verdict::verified);
  return events;
}
std::vector<Activity> activities(const std::vector<ProgressEvent>& events) {
  std::vector<Activity> order;
  for (const auto& e : events) {
    if (order.empty() || order.back() != e.activity) order.push_back(e.activity);
  }
  return order;
}
bool told(const std::vector<ProgressEvent>& events, Activity a, std::string_view text) {
  return std::any_of(events.begin(), events.end(),
                     [&](const auto& e) { return e.activity == a && e.detail.find(text) != std::string::npos; });
}
}  // namespace

TEST_CASE("a run tells each activity in order: observe, Proxmox, guests, probe") {
  SeedWorld w;
  const auto events = reconcile_events(w);
  CHECK(activities(events) ==
        std::vector<Activity>{Activity::observe, Activity::proxmox, Activity::guests, Activity::probe});
  // The guests observed, counted: 0 of 1 before, 1 of 1 after.
  REQUIRE(events.size() >= 2);
  CHECK((events[0].done == 0 && events[0].total == 1));
  CHECK((events[1].activity == Activity::observe && events[1].done == 1 && events[1].total == 1));
  CHECK(told(events, Activity::proxmox, "setting net1 of VM 101 (hot-plug)"));
  CHECK(told(events, Activity::proxmox, "waiting for net1 of VM 101 to come back in media-vm"));
  // The probe announced with its size, then the bytes it moved.
  std::uint64_t moved = 0;
  bool announced = false;
  for (const auto& e : events) {
    if (e.activity != Activity::probe) continue;
    if (e.done == 0 && e.total == 64ull << 20 && e.policy == "movies-10g") announced = true;
    moved += e.done;
  }
  CHECK(announced);
  CHECK(moved >= 64ull << 20);
}

TEST_CASE("a reboot is told with the VM waited for, then the guests waited for") {
  SeedWorld w;
  w.vm().current["hotplug"] = "disk,usb";  // the queues change waits for a reboot
  const auto events = reconcile_events(w);
  CHECK(activities(events) == std::vector<Activity>{Activity::observe, Activity::proxmox, Activity::restart,
                                                    Activity::guests, Activity::probe});
  CHECK(told(events, Activity::restart, "rebooting VM 101 through Proxmox, waiting for it to return"));
  CHECK(told(events, Activity::restart, "waiting for 1 guest(s) to answer again"));
}

TEST_CASE("the progress picture: activity, guests of total, bytes probed, elapsed") {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
  ProgressTracker t(t0);
  CHECK_FALSE(t.started());
  CHECK(t.take({Activity::observe, "", "observing guests", 0, 40}, t0));
  CHECK(t.line(t0 + 5s) == "observing guests (0 of 40) · elapsed 5s");
  CHECK_FALSE(t.take({Activity::observe, "", "observing guests", 12, 40}, t0 + 6s));  // same activity
  CHECK(t.line(t0 + 65s) == "observing guests (12 of 40) · elapsed 1m05s");
  CHECK(t.take({Activity::restart, "movies", "rebooting VM 101 through Proxmox, waiting for it to return"}, t0 + 70s));
  CHECK(t.line(t0 + 70s) == "movies: rebooting VM 101 through Proxmox, waiting for it to return · elapsed 1m10s");
  CHECK(t.take({Activity::probe, "movies", "probing /mnt/movies/probe.bin", 0, 256ull << 20}, t0 + 80s));
  CHECK_FALSE(t.take({Activity::probe, "movies", "probed /mnt/movies/probe.bin", 256ull << 20}, t0 + 90s));
  CHECK(t.line(t0 + 90s) == "movies: probing /mnt/movies/probe.bin (256.0 MiB) · probed 256.0 MiB · elapsed 1m30s");
  // A warning is logged apart: it changes nothing of the picture.
  CHECK_FALSE(t.take({Activity::warning, "", "could not store the result"}, t0 + 91s));
  CHECK(t.line(t0 + 91s).starts_with("movies: probing"));
  CHECK(t.line(t0 + 2h + 3min).ends_with("elapsed 2h03m"));
}

TEST_CASE("off a terminal: a line per activity, and one a minute while it lasts") {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
  ProgressTracker t(t0);
  CHECK_FALSE(t.minute_due(t0 + 5min));  // nothing before the first activity
  CHECK(t.take({Activity::guests, "", "writing the fstab of 3 guest(s)", 0, 3}, t0 + 5min));
  CHECK_FALSE(t.minute_due(t0 + 5min + 59s));
  CHECK(t.minute_due(t0 + 6min));
  CHECK_FALSE(t.minute_due(t0 + 6min + 30s));  // the minute counts from the last line
  CHECK(t.minute_due(t0 + 7min));
  CHECK(t.take({Activity::probe, "p", "probing f", 0, 1}, t0 + 7min + 40s));  // a line of its own...
  CHECK_FALSE(t.minute_due(t0 + 8min + 20s));                                 // ...which restarts the minute
  CHECK(t.minute_due(t0 + 8min + 40s));
}
