// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A GuestPort that runs a test's fault injection right before and after each call of the guest
// port it wraps: faults land exactly at a run's phase boundaries (after the plan, before the
// fstab write, during the probe, after a restart), without any hook in the product.
#include <functional>
#include <string>

#include "guest/port.hpp"

namespace pw::reliability {

class InjectingGuests final : public guest::GuestPort {
 public:
  explicit InjectingGuests(guest::GuestPort& inner) : inner_(inner) {}

  // Called with the call's name: gather_facts, apply_fstab, restore_fstab, set_channels, probe,
  // wait_reachable.
  std::function<void(const std::string& call)> before;
  std::function<void(const std::string& call)> after;

 private:
  // Defined before its uses: its return type is deduced.
  template <class F>
  auto around(const std::string& call, F f) {
    if (before) before(call);
    auto r = f();
    if (after) after(call);
    return r;
  }

 public:
  using guest::GuestPort::gather_facts;
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> gather_facts(
      std::span<const std::string> hosts, const guest::FactsRequests& names) override {
    return around("gather_facts", [&] { return inner_.gather_facts(hosts, names); });
  }
  std::map<std::string, guest::GuestResult<void>> apply_fstab(std::span<const guest::FstabChange> c) override {
    return around("apply_fstab", [&] { return inner_.apply_fstab(c); });
  }
  std::map<std::string, guest::GuestResult<void>> restore_fstab(std::span<const guest::FstabRestore> r) override {
    return around("restore_fstab", [&] { return inner_.restore_fstab(r); });
  }
  std::map<std::string, guest::GuestResult<void>> set_channels(std::span<const guest::ChannelsRequest> r) override {
    return around("set_channels", [&] { return inner_.set_channels(r); });
  }
  std::map<std::string, guest::GuestResult<void>> move_transport(std::span<const guest::TransportMove> r) override {
    return around("move_transport", [&] { return inner_.move_transport(r); });
  }
  std::map<std::string, guest::GuestResult<guest::ProbeOutcome>> probe(
      std::span<const guest::ProbeRequest> p) override {
    return around("probe", [&] { return inner_.probe(p); });
  }
  std::map<std::string, guest::GuestResult<guest::GuestFacts>> wait_reachable(std::span<const std::string> hosts,
                                                                              std::chrono::seconds timeout) override {
    return around("wait_reachable", [&] { return inner_.wait_reachable(hosts, timeout); });
  }

 private:
  guest::GuestPort& inner_;
};

}  // namespace pw::reliability
