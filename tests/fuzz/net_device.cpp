// SPDX-License-Identifier: GPL-3.0-or-later
// The netN codec is how pathwarden rewrites a VM's NIC: one wrong byte and the VM loses its
// network (or its MAC). For any text it accepts, and after any sequence of set/erase:
//  - parse(to_string(x)) == x (an edit changes only the edited key, everything else stays as written);
//  - canonical() is a fixed point: parse(canonical(x)).canonical() == canonical(x), and the
//    canonical form of x is the canonical form of parse(to_string(x));
//  - set(k, v) that succeeds makes get(k) == v and leaves every other key's value alone;
//    a refused set or erase changes nothing.
// Input: the netN text, a NUL byte, then edits (op byte, key index, length-prefixed value).
#include "proxmox/net_device.hpp"

#include <string>

#include "invariant.hpp"

namespace {

using namespace pw;
using proxmox::NetDeviceSpec;

constexpr std::string_view kKeys[] = {"model",  "macaddr", "bridge", "firewall", "host-tunnel", "link_down", "mtu",
                                      "queues", "rate",    "tag",    "trunks",   "virtio",      "e1000",     "unknown"};

void check_well_formed(const NetDeviceSpec& x, const std::string& context) {
  const auto printed = x.to_string();
  auto reparsed = NetDeviceSpec::parse(printed);
  PW_FUZZ_CHECK(reparsed.has_value(), context + ": to_string gives '" + fuzz::printable(printed) +
                                          "' which does not parse: " + (reparsed ? "" : reparsed.error().to_string()));
  PW_FUZZ_CHECK(*reparsed == x, context + ": parse(to_string(x)) != x for '" + fuzz::printable(printed) + "'");

  const auto canonical = x.canonical();
  auto from_canonical = NetDeviceSpec::parse(canonical);
  PW_FUZZ_CHECK(from_canonical.has_value(),
                context + ": canonical '" + fuzz::printable(canonical) +
                    "' does not parse: " + (from_canonical ? "" : from_canonical.error().to_string()));
  PW_FUZZ_CHECK(from_canonical->canonical() == canonical, context + ": canonical is not stable: " + canonical);
  PW_FUZZ_CHECK(reparsed->canonical() == canonical, context);
  PW_FUZZ_CHECK(from_canonical->model() == x.model() && from_canonical->mac() == x.mac() &&
                    from_canonical->bridge() == x.bridge() && from_canonical->queues() == x.queues(),
                context + ": canonical form changed a value: " + canonical);

  PW_FUZZ_CHECK(!x.model().empty(), context + ": no model");
  if (auto q = x.queues()) PW_FUZZ_CHECK(*q >= 0 && *q <= proxmox::kMaxQueues, context);
  for (const auto& f : x.fields) {
    PW_FUZZ_CHECK(proxmox::validate_net_value(f.key, f.value).has_value(),
                  context + ": invalid value kept: " + f.key + "=" + fuzz::printable(f.value));
  }
}

void one_input(const std::uint8_t* data, std::size_t size) {
  fuzz::Pieces in(data, size);
  const auto text = in.until(std::string_view("\0", 1));
  auto parsed = NetDeviceSpec::parse(text);
  if (!parsed) {
    PW_FUZZ_CHECK_ERROR(parsed.error());
    return;
  }
  NetDeviceSpec x = std::move(*parsed);
  check_well_formed(x, "parsed '" + fuzz::printable(text) + "'");
  for (int n = 0; n < 8 && !in.empty(); ++n) {
    const auto op = in.byte();
    const std::string key(kKeys[in.byte() % std::size(kKeys)]);
    const auto value = in.text(40);
    const NetDeviceSpec before = x;
    const std::string context = "after " + std::string(op % 4 == 0 ? "erase " : "set ") + key + "=" +
                                fuzz::printable(value) + " on '" + fuzz::printable(before.to_string()) + "'";
    if (op % 4 == 0) {
      auto st = x.erase(key);
      if (!st) {
        PW_FUZZ_CHECK(x == before, context + ": refused erase changed the spec");
        continue;
      }
      PW_FUZZ_CHECK(!x.get(key), context);
    } else {
      auto st = x.set(key, value);
      if (!st) {
        PW_FUZZ_CHECK_ERROR(st.error());
        PW_FUZZ_CHECK(x == before, context + ": refused set changed the spec");
        continue;
      }
      PW_FUZZ_CHECK(x.get(key) == std::string(value), context);
    }
    for (const auto& f : before.fields) {
      if (f.key != key) PW_FUZZ_CHECK(x.get(f.key) == f.value, context + ": another key changed: " + f.key);
    }
    check_well_formed(x, context);
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
