// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The independent observations a verdict rests on (README "How a change is verified"), each
// read around the same probe and judged on its own before the verifier weighs them:
//   guest_counters        the guest's interface byte counters, net of each link's background
//   host_taps             the hypervisor's per-tap counters (Proxmox status/current "nics"): the
//                         bytes per Proxmox NIC as the host saw them; nothing in the guest relabels them
//   connection_bytes      the NFS connections' own tcp_info byte counters: whose bytes moved,
//                         whatever else ran on the same links
//   connection_interface  the interface that owns each NFS connection's local address
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace pw::verify {

enum class Signal { guest_counters, host_taps, connection_bytes, connection_interface };
inline constexpr Signal kSignals[] = {Signal::guest_counters, Signal::host_taps, Signal::connection_bytes,
                                      Signal::connection_interface};

enum class SignalState {
  agreed,        // it says the probe's bytes took the intended NIC
  contradicted,  // it says they did not (or the path cannot be the intended one)
  undecided,     // it was read but cannot tell (too little, too noisy, ambiguous)
  unavailable,   // it could not be read: the verdict rests on the others
};
inline constexpr SignalState kSignalStates[] = {SignalState::agreed, SignalState::contradicted, SignalState::undecided,
                                                SignalState::unavailable};

constexpr std::string_view to_string(Signal s) {
  switch (s) {
    case Signal::guest_counters:
      return "guest-counters";
    case Signal::host_taps:
      return "host-taps";
    case Signal::connection_bytes:
      return "connection-bytes";
    case Signal::connection_interface:
      return "connection-interface";
  }
  return "?";
}

constexpr std::string_view to_string(SignalState s) {
  switch (s) {
    case SignalState::agreed:
      return "agreed";
    case SignalState::contradicted:
      return "contradicted";
    case SignalState::undecided:
      return "undecided";
    case SignalState::unavailable:
      return "unavailable";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, Signal s) {
  return os << to_string(s);
}
inline std::ostream& operator<<(std::ostream& os, SignalState s) {
  return os << to_string(s);
}

struct SignalReading {
  Signal signal = Signal::guest_counters;
  SignalState state = SignalState::unavailable;
  std::string detail;  // one line: what it saw, or why it could not be read
};

}  // namespace pw::verify
