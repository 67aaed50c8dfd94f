// SPDX-License-Identifier: GPL-3.0-or-later
// dd's summary line gives the probe's size and duration; the verifier divides by the seconds.
// Whatever dd (or a guest) printed, a summary it accepts has a byte count that is the number
// printed and a duration that is a finite, non-negative number of seconds.
#include "guest/dd_summary.hpp"

#include <cmath>
#include <string>

#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto summary = guest::parse_dd_summary(text);
  if (!summary) return;
  PW_FUZZ_CHECK(std::isfinite(summary->seconds) && summary->seconds >= 0,
                "seconds " + std::to_string(summary->seconds) + " from " + fuzz::printable(text));
  PW_FUZZ_CHECK(text.find(std::to_string(summary->bytes)) != std::string_view::npos,
                "bytes " + std::to_string(summary->bytes) + " not in " + fuzz::printable(text));
}

}  // namespace

PW_FUZZ_TARGET(one_input)
