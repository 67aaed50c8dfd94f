// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `pathwarden verify`: an audit that changes nothing. Without a probe it judges effective mount
// options, queues and connection addresses from one facts run (it can find a path wrong, never
// prove it right); with one it measures each policy's path once, as the verify step does.
#include <span>

#include "policy/model.hpp"
#include "reconcile/context.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

class Audit {
 public:
  explicit Audit(const Context& ctx) : ctx_(ctx) {}
  report::RunReport run(std::span<const policy::StoragePath> policies, bool probe);

 private:
  const Context& ctx_;
};

}  // namespace pw::reconcile
