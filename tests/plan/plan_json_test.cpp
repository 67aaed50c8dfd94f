#include <catch2/catch.hpp>

#include <boost/json.hpp>

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
