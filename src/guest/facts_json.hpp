// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A guest's facts as pathwarden read them, as JSON (`plan --facts-out`): what support asks for
// ("what does pathwarden see in this guest?"), and how the lab proves that the guest agent and
// SSH read the same facts, field by field. Every field of GuestFacts, parsed, never the raw text.
#include <boost/json/value.hpp>

#include "guest/facts.hpp"

namespace pw::guest {

boost::json::value to_json(const GuestFacts& facts);

}  // namespace pw::guest
