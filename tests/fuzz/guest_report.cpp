// SPDX-License-Identifier: GPL-3.0-or-later
// The facts report a guest's script prints (see guest_report_script()), framed as
// guest/script_output.hpp says. Whatever the guest printed: a report without its begin line, its
// end mark or its fstab section is refused; an accepted one keeps the fstab byte for byte with
// the hash of exactly those bytes, and holds what each section's own parser reads from it.
#include <algorithm>
#include <string>

#include "guest/facts.hpp"
#include "guest/script_output.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  fuzz::Pieces in(data, size);
  const auto report = in.rest();
  auto facts = guest::parse_guest_report(report, "guest-1");
  if (!fuzz::accepted(facts, "guest-1")) return;
  auto output = guest::split_script_output(report, "facts report", "guest-1");
  PW_FUZZ_CHECK(output.has_value(), "accepted a report the splitter refuses");
  PW_FUZZ_CHECK(output->finished, "accepted a report without its end mark");
  PW_FUZZ_CHECK(!output->sections.empty() && output->sections.front().words == std::vector<std::string>{"fstab"},
                "accepted a report without its fstab section first");
  const auto fstab = guest::decode_base64(output->sections.front().body);
  PW_FUZZ_CHECK(fstab.has_value(), "accepted an fstab that is not base64");
  std::size_t iface_sections = 0;
  for (const auto& s : output->sections) iface_sections += !s.words.empty() && s.words.front() == "iface";
  PW_FUZZ_CHECK(facts->host == "guest-1", facts->host);
  PW_FUZZ_CHECK(facts->fstab_content == *fstab && facts->fstab.print() == *fstab, "fstab bytes changed");
  PW_FUZZ_CHECK(facts->fstab_sha256 == guest::sha256_hex(*fstab) && facts->fstab_sha256.size() == 64 &&
                    std::all_of(facts->fstab_sha256.begin(), facts->fstab_sha256.end(),
                                [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }),
                facts->fstab_sha256);
  PW_FUZZ_CHECK(facts->boot_id == guest::trim(facts->boot_id), fuzz::printable(facts->boot_id));
  PW_FUZZ_CHECK(facts->interfaces.size() == iface_sections, "one interface per iface section");
  for (const auto& i : facts->interfaces) {
    PW_FUZZ_CHECK(i.rx_queues >= 0 && i.tx_queues >= 0, fuzz::printable(i.name));
    PW_FUZZ_CHECK(!i.ifindex || *i.ifindex >= 0, fuzz::printable(i.name));
    PW_FUZZ_CHECK(!i.speed_mbps || *i.speed_mbps >= 0, fuzz::printable(i.name));
  }
  for (const auto& c : facts->nfs_connections) PW_FUZZ_CHECK(c.peer_port >= 0 && c.peer_port <= 65535, "ss port");
  for (const auto& s : facts->nfs_servers) PW_FUZZ_CHECK(s.port >= 0 && s.port <= 65535, "nfs server port");
}

}  // namespace

PW_FUZZ_TARGET(one_input)
