// SPDX-License-Identifier: GPL-3.0-or-later
// A plan file's seal (plan/plan_seal.hpp): any edit of any value, a missing seal, another key's
// seal and a malformed one are refused, naming the seal; reformatting the JSON is not an edit.
#include "plan/plan_seal.hpp"

#include <catch2/catch.hpp>

using namespace pw;
namespace json = boost::json;

namespace {
const std::string kKey(32, 'k');

json::object sealed_plan() {
  auto plan = json::parse(R"({"format":"pathwarden-plan","format_version":"1.4","id":"p1","policies":[
      {"policy":"movies","steps":[{"kind":"change-fstab","backup_path":"/var/backups/pathwarden/fstab.p1",
       "new_content":"a b nfs vers=3 0 0\n","min_share":0.9}]}]})")
                  .as_object();
  plan::seal(plan, kKey);
  return plan;
}
}  // namespace

TEST_CASE("a sealed plan checks; re-serialised by another writer it still does") {
  const auto plan = sealed_plan();
  CHECK(plan.at("seal").at("alg") == "HMAC-SHA-256");
  CHECK(plan.at("seal").at("value").as_string().size() == 64);
  CHECK(plan::check_seal(plan, kKey, "plan.json"));
  const auto reparsed = json::parse(json::serialize(plan)).as_object();
  CHECK(plan::check_seal(reparsed, kKey, "plan.json"));
}

TEST_CASE("an edited, unsealed, foreign or malformed plan is refused naming the seal") {
  auto plan = sealed_plan();
  SECTION("a value edited") {
    plan["policies"].as_array()[0].as_object()["steps"].as_array()[0].as_object()["backup_path"] = "/tmp";
    auto st = plan::check_seal(plan, kKey, "plan.json");
    REQUIRE_FALSE(st);
    CHECK(st.error().what.find("the plan's 'seal' does not match its content") != std::string::npos);
    CHECK(st.error().where == "plan.json");
  }
  SECTION("a member added") {
    plan["extra"] = 1;
    CHECK_FALSE(plan::check_seal(plan, kKey, "plan.json"));
  }
  SECTION("another controller's key") {
    CHECK_FALSE(plan::check_seal(plan, std::string(32, 'x'), "plan.json"));
  }
  SECTION("no seal") {
    plan.erase("seal");
    auto st = plan::check_seal(plan, kKey, "plan.json");
    REQUIRE_FALSE(st);
    CHECK(st.error().what.find("the plan has no seal") != std::string::npos);
  }
  SECTION("a seal of another shape") {
    plan["seal"] = "0000";
    CHECK_FALSE(plan::check_seal(plan, kKey, "plan.json"));
    plan["seal"] = json::object{{"alg", "none"}, {"value", ""}};
    CHECK_FALSE(plan::check_seal(plan, kKey, "plan.json"));
  }
}
