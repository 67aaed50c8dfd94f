// SPDX-License-Identifier: GPL-3.0-or-later
// The commit-latency figure (report::CommitFigure): the rate, the policy's minimum, the words
// and the JSON that carry it.
#include <catch2/catch.hpp>

#include "report/html_report.hpp"
#include "report/report_json.hpp"
#include "report/run_report.hpp"

using namespace pw::report;

namespace {

CommitFigure figure(int cycles, double seconds, std::optional<double> minimum = std::nullopt) {
  CommitFigure f;
  f.cycles = cycles;
  f.seconds = seconds;
  f.minimum = minimum;
  return f;
}

}  // namespace

TEST_CASE("the rate is cycles over dd's time; none without a run") {
  CHECK(figure(256, 0.41).per_second() == Approx(624.39).epsilon(1e-4));
  CHECK_FALSE(figure(0, 0.41).per_second());
  CHECK_FALSE(figure(256, 0).per_second());
  auto failed = figure(256, 0.41);
  failed.error = "dd: failed to open 'x': File exists";
  CHECK_FALSE(failed.per_second());
}

TEST_CASE("below the minimum: a slower rate, or no figure at all when one is required") {
  CHECK_FALSE(figure(256, 0.41).below_minimum());  // no minimum: a figure only
  CHECK_FALSE(figure(256, 0.41, 500).below_minimum());
  CHECK_FALSE(figure(250, 0.25, 1000).below_minimum());  // exactly the minimum is enough
  CHECK(figure(256, 0.41, 1000).below_minimum());
  auto failed = figure(0, 0, 10);
  failed.error = "dd: error writing 'x': Read-only file system";
  CHECK(failed.below_minimum());
  failed.minimum.reset();
  CHECK_FALSE(failed.below_minimum());
}

TEST_CASE("the figure in words") {
  CHECK(figure(256, 0.41).describe() == "256 × 8 KiB O_DSYNC writes in 0.41 s: 624 commits/s (1.60 ms each)");
  CHECK(figure(256, 0.41, 500).describe() ==
        "256 × 8 KiB O_DSYNC writes in 0.41 s: 624 commits/s (1.60 ms each), at least the policy's 500");
  CHECK(figure(256, 0.41, 1000).describe() ==
        "256 × 8 KiB O_DSYNC writes in 0.41 s: 624 commits/s (1.60 ms each), below the policy's minimum of 1000");
  // Slow paths and fractional minimums keep their digits.
  CHECK(figure(10, 40, 0.5).describe() ==
        "10 × 8 KiB O_DSYNC writes in 40.00 s: 0.25 commits/s (4000.00 ms each), below the policy's minimum of 0.5");
  auto failed = figure(0, 0, 10);
  failed.error = "dd: failed to open 'x': File exists";
  CHECK(failed.describe() == "commit latency not measured: dd: failed to open 'x': File exists");
}

TEST_CASE("the figure in the JSON report and back, and in the text report") {
  RunReport r;
  r.run_id = "run-1";
  PolicyReport p;
  p.policy = "pg";
  p.verdict = Verdict::inconclusive;
  Verification v;
  v.verdict = Verdict::inconclusive;
  v.summary = "the path is right; but commits are too slow";
  v.commit = figure(256, 0.41, 1000);
  p.verification = v;
  p.remedy = {"in project pg's Compose file ...", "then prove it: pathwarden verify --probe --policy pg"};
  r.policies.push_back(p);
  const auto json = to_json(r);
  const auto& c = json.at("policies").at(0).at("verification").at("commit").as_object();
  CHECK(c.at("cycles").to_number<int>() == 256);
  CHECK(c.at("seconds").to_number<double>() == Approx(0.41));
  CHECK(c.at("commits_per_second").to_number<double>() == Approx(624.39).epsilon(1e-4));
  CHECK(c.at("minimum").to_number<double>() == Approx(1000));
  CHECK(c.at("below_minimum").as_bool());
  CHECK(c.at("error").is_null());
  auto back = run_report_from_json(json, "report.json");
  if (!back) FAIL(back.error().to_string());
  REQUIRE(back->policies.at(0).verification->commit);
  const auto& f = *back->policies[0].verification->commit;
  CHECK(f.cycles == 256);
  CHECK(f.minimum == Approx(1000));
  CHECK(f.below_minimum());
  CHECK(back->policies[0].remedy == p.remedy);
  const auto text = render_text(r);
  CHECK_THAT(text, Catch::Contains("    256 × 8 KiB O_DSYNC writes in 0.41 s: 624 commits/s (1.60 ms each), below the "
                                   "policy's minimum of 1000\n"));
  CHECK_THAT(text, Catch::Contains("remedy 1: in project pg's Compose file ..."));
  CHECK_THAT(text, Catch::Contains("remedy 2: then prove it: pathwarden verify --probe --policy pg"));
  // The page: the figure, marked as a warning when below the minimum (HTML-escaped).
  const auto html = render_html(r);
  CHECK_THAT(html, Catch::Contains("<li class=\"warning\">commit latency <b>256 × 8 KiB O_DSYNC writes in 0.41 s: "
                                   "624 commits/s (1.60 ms each), below the policy&#39;s minimum of 1000</b></li>"));
}
