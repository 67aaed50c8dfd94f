// The facts report a guest's script prints (see guest_report_script()), plus its fstab bytes.
// Whatever the guest printed: a report without its end marker is refused; an accepted one keeps
// the fstab byte for byte with the hash of exactly those bytes, and holds what each section's
// own parser reads from that section.
// Input: fstab bytes, a NUL byte, then the report.
#include <algorithm>
#include <string>

#include "guest/facts.hpp"
#include "guest/sha256.hpp"
#include "guest/tokens.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  fuzz::Pieces in(data, size);
  const std::string fstab(in.until(std::string_view("\0", 1)));
  const auto report = in.rest();
  auto facts = guest::parse_guest_report(report, fstab, "guest-1");
  bool has_end = false;
  std::size_t iface_sections = 0;
  for (auto line : guest::lines_of(report)) {
    if (!line.starts_with("@@pathwarden ")) continue;
    const auto name = guest::trim(line.substr(13));
    if (name == "end") {
      has_end = true;
      break;
    }
    if (name.starts_with("iface ")) ++iface_sections;
  }
  if (!fuzz::accepted(facts, "guest-1")) return;
  PW_FUZZ_CHECK(has_end, "accepted a report without '@@pathwarden end'");
  PW_FUZZ_CHECK(facts->host == "guest-1", facts->host);
  PW_FUZZ_CHECK(facts->fstab_content == fstab && facts->fstab.print() == fstab, "fstab bytes changed");
  PW_FUZZ_CHECK(facts->fstab_sha256 == guest::sha256_hex(fstab) && facts->fstab_sha256.size() == 64 &&
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
