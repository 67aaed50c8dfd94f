// SPDX-License-Identifier: GPL-3.0-or-later
// A plan file is applied exactly as written, possibly days after it was planned, so reading one
// must be faithful: whatever JSON it is, plan_from_json either refuses it with a message or
// returns a plan that says exactly what the file says (writing it back gives the file's values,
// no number silently truncated, no field of the wrong type silently dropped), and that survives
// another write/read unchanged.
#include <boost/json.hpp>
#include <cmath>
#include <string>

#include "diagnostics/format_version.hpp"
#include "invariant.hpp"
#include "plan/model.hpp"

namespace {

using namespace pw;
namespace json = boost::json;

bool same_number(const json::value& a, const json::value& b) {
  if (a.is_double() || b.is_double()) {
    const double x = a.is_double()  ? a.get_double()
                     : a.is_int64() ? static_cast<double>(a.get_int64())
                                    : static_cast<double>(a.get_uint64());
    const double y = b.is_double()  ? b.get_double()
                     : b.is_int64() ? static_cast<double>(b.get_int64())
                                    : static_cast<double>(b.get_uint64());
    // A double read as a whole number would be a silent truncation; integral input read as a
    // double (min_share: 1) is fine.
    if (a.is_double() != b.is_double() && (a.is_double() ? a : b).get_double() != std::floor(x)) return false;
    return x == y;
  }
  if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
  if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
  const auto& s = a.is_int64() ? a : b;  // one signed, one unsigned
  const auto& u = a.is_int64() ? b : a;
  return s.get_int64() >= 0 && static_cast<std::uint64_t>(s.get_int64()) == u.get_uint64();
}

// Every value the plan writes back must be the one the file holds at that place.
void check_faithful(const json::value& written, const json::value* input, const std::string& path) {
  if (input == nullptr || input->is_null()) {
    PW_FUZZ_CHECK(written.is_null(), path + " is not in the file but reads as " + json::serialize(written));
    return;
  }
  if (written.is_number() || input->is_number()) {
    PW_FUZZ_CHECK(written.is_number() && input->is_number() && same_number(written, *input),
                  path + ": file says " + json::serialize(*input) + ", plan says " + json::serialize(written));
    return;
  }
  PW_FUZZ_CHECK(written.kind() == input->kind(),
                path + ": file says " + json::serialize(*input) + ", plan says " + json::serialize(written));
  if (written.is_object()) {
    for (const auto& [k, v] : written.get_object()) {
      check_faithful(v, input->get_object().if_contains(k), path + "." + std::string(k));
    }
  } else if (written.is_array()) {
    const auto& w = written.get_array();
    const auto& i = input->get_array();
    PW_FUZZ_CHECK(w.size() == i.size(), path + ": " + std::to_string(i.size()) + " items in the file, " +
                                            std::to_string(w.size()) + " in the plan");
    for (std::size_t n = 0; n < w.size(); ++n) check_faithful(w[n], &i[n], path + "[" + std::to_string(n) + "]");
  } else {
    PW_FUZZ_CHECK(written == *input,
                  path + ": file says " + json::serialize(*input) + ", plan says " + json::serialize(written));
  }
}

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::system::error_code ec;
  const json::value input = json::parse(text, ec);
  if (ec) return;

  auto plan = plan::plan_from_json(input);
  if (!plan) {
    PW_FUZZ_CHECK_ERROR(plan.error());
  } else {
    const json::value written = plan::to_json(*plan);
    // The writer's stamp is the writer's, not the file's: the format it writes and its own version.
    json::value content = written;
    json::value input_content = input;
    for (auto* o : {&content.as_object(), input_content.is_object() ? &input_content.as_object() : nullptr}) {
      if (o == nullptr) continue;
      o->erase("format_version");
      o->erase("pathwarden_version");
    }
    PW_FUZZ_CHECK(written.at("format_version") ==
                      json::value(FormatVersion{plan::Plan::kFormatMajor, plan::Plan::kFormatMinor}.str()),
                  "a plan is written in another format than the writer's");
    PW_FUZZ_CHECK(written.at("pathwarden_version") == json::value(PW_VERSION), "a plan names another writer");
    check_faithful(content, &input_content, "plan");
    auto again = plan::plan_from_json(json::parse(json::serialize(written)));
    PW_FUZZ_CHECK(again.has_value(), "a written plan does not read back: " + (again ? "" : again.error().to_string()));
    PW_FUZZ_CHECK(plan::to_json(*again) == written, "plan changed on a second write/read");
    for (const auto& p : plan->policies) {
      for (const auto& s : p.steps) PW_FUZZ_CHECK(!to_string(s.kind()).empty(), "step kind");
    }
    (void)plan->has_changes();
    (void)plan->has_blockers();
  }

  // A single step, as the journal stores them.
  auto step = plan::step_from_json(input);
  if (!step) {
    PW_FUZZ_CHECK_ERROR(step.error());
    return;
  }
  const json::value written = plan::step_to_json(*step);
  check_faithful(written, &input, "step");
  auto again = plan::step_from_json(written);
  PW_FUZZ_CHECK(again.has_value() && plan::step_to_json(*again) == written, "step changed on a second write/read");
}

}  // namespace

PW_FUZZ_TARGET(one_input)
