// SPDX-License-Identifier: GPL-3.0-or-later
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "fixtures.hpp"

using namespace pw::plan;
using namespace pw::plan::testing;

TEST_CASE("a plan survives being saved and read back") {
  Plan plan = make_plan(std::vector{movies_policy()}, std::vector{seed_observation()}, context());
  const auto text = boost::json::serialize(to_json(plan));
  auto back = plan_from_json(boost::json::parse(text));
  REQUIRE(back.has_value());
  CHECK(boost::json::serialize(to_json(*back)) == text);
  REQUIRE(back->policies.size() == 1);
  CHECK(back->policies[0].steps.size() == plan.policies[0].steps.size());
}

TEST_CASE("a plan file says its format_version and the pathwarden that wrote it; older and newer minors are read") {
  Plan plan = make_plan(std::vector{movies_policy()}, std::vector{seed_observation()}, context());
  auto json = to_json(plan).as_object();
  CHECK(json.at("format") == "pathwarden-plan");
  CHECK(json.at("format_version") == "1.7");
  CHECK(json.at("pathwarden_version") == PW_VERSION);
  CHECK(json.at("version") == 1);  // the major, for pathwardens that read only "version"

  // Format 1.0: a plan saved before format_version existed.
  auto old = json;
  old.erase("format_version");
  old.erase("pathwarden_version");
  auto back = plan_from_json(old);
  REQUIRE(back.has_value());
  CHECK(back->policies[0].steps.size() == plan.policies[0].steps.size());

  // Before 1.6 the proof step was "verify": read as prove-path, written back as prove-path.
  auto v15 = json;
  v15["format_version"] = "1.5";
  auto& steps = v15["policies"].as_array()[0].as_object()["steps"].as_array();
  REQUIRE(steps.back().as_object()["kind"] == "prove-path");
  steps.back().as_object()["kind"] = "verify";
  auto read15 = plan_from_json(v15);
  REQUIRE(read15.has_value());
  CHECK(read15->policies[0].steps.back().kind() == StepKind::prove_path);
  CHECK(step_kind_from("verify") == StepKind::prove_path);
  CHECK(step_kind_from("prove-path") == StepKind::prove_path);

  // A later minor adds fields this reader ignores.
  auto newer = json;
  newer["format_version"] = "1.9";
  newer["something_new"] = true;
  CHECK(plan_from_json(newer).has_value());

  // An unknown major is refused, naming both versions.
  auto major = json;
  major["format_version"] = "2.0";
  major["pathwarden_version"] = "9.9.9";
  auto refused = plan_from_json(major);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().what ==
        "plan format_version 2.0 (written by pathwarden 9.9.9) is not one this pathwarden (" PW_VERSION
        ") reads: it reads 1.x");
  major["format_version"] = "two";
  REQUIRE_FALSE(plan_from_json(major).has_value());
  CHECK(plan_from_json(major).error().what == "plan format_version 'two' is not MAJOR.MINOR");
}

TEST_CASE("damaged plan files are refused with a reason") {
  CHECK_FALSE(plan_from_json(boost::json::parse("{}")).has_value());
  CHECK_FALSE(plan_from_json(boost::json::parse(R"({"format":"pathwarden-plan","version":99})")).has_value());
  Plan plan = make_plan(std::vector{movies_policy()}, std::vector{seed_observation()}, context());
  auto json = to_json(plan);
  json.as_object()["policies"].as_array()[0].as_object()["steps"].as_array()[0].as_object().erase("digest");
  auto r = plan_from_json(json);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().what.find("digest") != std::string::npos);
}
