#pragma once
// `pathwarden recover`: finishes or undoes every run the journals show interrupted. A run whose
// verification was recorded "verified" only missed its last record and is finished; any other
// is rolled back from its journal alone (the plan is in it), never re-decided.
#include "reconcile/context.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

class Recovery {
 public:
  explicit Recovery(const Context& ctx) : ctx_(ctx) {}
  report::RunReport run();

 private:
  const Context& ctx_;
};

}  // namespace pw::reconcile
