// SPDX-License-Identifier: GPL-3.0-or-later
// The other guest scripts' reports, framed as guest/script_output.hpp says: the probe report
// (counter reads, dd, commit cycles, a refusal) and the fstab scripts' stage marks. One input
// goes to the splitter and both readers. Whatever the guest printed: no crash; nothing is read
// before the begin line or after the end mark; a mark is only a line with the run's own token;
// an accepted probe report has its before and after reads and its probe, or only a refusal.
#include <string>

#include "guest/change_script.hpp"
#include "guest/probe_report.hpp"
#include "guest/script_output.hpp"
#include "guest/tokens.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  fuzz::Pieces in(data, size);
  const auto text = in.rest();
  auto output = guest::split_script_output(text, "report", "guest-1", 4096);
  if (output) {
    std::size_t body = 0;
    for (const auto& s : output->sections) {
      PW_FUZZ_CHECK(!s.words.empty(), "a section without a name");
      PW_FUZZ_CHECK(s.body.size() <= 4096, "a section over its cap");
      body += s.body.size();
    }
    PW_FUZZ_CHECK(body <= text.size(), "more body than input");
    PW_FUZZ_CHECK(text.find(guest::kBeginMark) != std::string_view::npos, "split without a begin line");
  }
  auto probe = guest::parse_probe_report(text, "guest-1");
  if (fuzz::accepted(probe, "guest-1")) {
    PW_FUZZ_CHECK(output.has_value() && output->finished, "a probe report accepted without its end mark");
    if (probe->refused) {
      PW_FUZZ_CHECK(!probe->baseline && !probe->commit, "a refusal with reads");
    } else {
      PW_FUZZ_CHECK(probe->probe_seconds == probe->probe_seconds, "probe seconds NaN");
      PW_FUZZ_CHECK(probe->before.at >= 0 && probe->after.at >= 0, "a negative clock");
    }
  }
  auto change = guest::parse_change_report(text, "guest-1");
  if (fuzz::accepted(change, "guest-1")) {
    PW_FUZZ_CHECK(output.has_value(), "a change report accepted without a begin line");
    PW_FUZZ_CHECK(change->last().has_value() == !change->stages.empty(), "last stage");
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
