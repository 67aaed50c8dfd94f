// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A plan as an operator reads it: per policy what changes, as a diff.
#include <string>
#include <string_view>
#include <vector>

#include "plan/model.hpp"

namespace pw::plan {

struct RenderOptions {
  bool colour = false;  // ANSI colours, for terminals only
};

std::string render_plan(const Plan& plan, const RenderOptions& options = {});

// Line diff of two small texts (fstab files): "  same", "- removed", "+ added".
std::vector<std::string> line_diff(std::string_view before, std::string_view after);

}  // namespace pw::plan
