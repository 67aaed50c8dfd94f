// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/nfs_evidence.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "net/mac_address.hpp"
#include "verify/text.hpp"

namespace pw::verify {
namespace {

std::string bare_address(std::string_view a) {
  if (a.size() >= 2 && a.front() == '[' && a.back() == ']') a = a.substr(1, a.size() - 2);
  std::string out(a);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_address(const std::vector<std::string>& list, std::string_view a) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& x) { return same_address(x, a); });
}

bool is_nas_address(const DesiredPath& d, std::string_view a) {
  return same_address(d.server, a) || contains_address(d.nas_addresses, a);
}

const LocalAddress* owner_of(const NfsEvidence& e, std::string_view address) {
  for (const auto& l : e.local_addresses)
    if (same_address(l.address, address)) return &l;
  return nullptr;
}

std::optional<unsigned> parse_unsigned(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// "SUNRPC: reached max allowed number (1) did not add transport to server: 192.0.2.2"
struct TransportRefusal {
  std::string line;
  std::string server;  // empty when the line names none
};

std::vector<TransportRefusal> transport_refusals(const NfsEvidence& e, const DesiredPath& d) {
  constexpr std::string_view marker = "did not add transport";
  constexpr std::string_view to_server = "to server:";
  std::vector<TransportRefusal> out;
  for (const auto& line : e.kernel_messages) {
    const auto at = line.find(marker);
    if (at == std::string::npos) continue;
    TransportRefusal r{line, {}};
    if (auto s = line.find(to_server, at); s != std::string::npos) {
      std::string_view rest = std::string_view(line).substr(s + to_server.size());
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      r.server = std::string(rest.substr(0, rest.find_first_of(" \t\r\n")));
    }
    if (r.server.empty() || is_nas_address(d, r.server)) out.push_back(std::move(r));
  }
  return out;
}

std::string describe_connection(const NfsEvidence& e, const NfsConnection& c) {
  std::string s = c.remote_address + ":" + std::to_string(c.remote_port) + " from " + c.local_address;
  if (const auto* o = owner_of(e, c.local_address)) s += " (" + o->interface_name + ")";
  return s;
}

// The NFSv4.1+ mounts that share one client (and so its transports) with the policy's NAS.
std::vector<std::string> v41_mounts_of_nas(const DesiredPath& d, const NfsEvidence& e) {
  std::vector<std::string> out;
  for (const auto& m : e.mounts) {
    const auto minor = nfs4_minor(m.version());
    if (minor && *minor >= 1 && is_nas_address(d, m.effective_address())) out.push_back(m.mount_point);
  }
  if (std::find(out.begin(), out.end(), d.mount_point) == out.end()) out.push_back(d.mount_point);
  return out;
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

bool version_satisfies(std::string_view effective, std::string_view wanted) {
  if (effective == wanted) return true;
  // "4" lets the client negotiate the minor version; "4" and "4.0" name the same protocol.
  if (wanted == "4") return effective == "4" || effective.starts_with("4.");
  if (wanted == "4.0") return effective == "4";
  return false;
}

}  // namespace

std::string_view to_string(RemedyKind kind) {
  switch (kind) {
    case RemedyKind::move_transport:
      return "move-transport";
    case RemedyKind::pin_nfs_v3:
      return "pin-nfs-v3";
    case RemedyKind::remount_all_of_server:
      return "remount-all-of-server";
    case RemedyKind::drop_max_connect:
      return "drop-max-connect";
    case RemedyKind::fix_route:
      return "fix-route";
    case RemedyKind::fix_return_route:
      return "fix-return-route";
    case RemedyKind::remount:
      return "remount";
    case RemedyKind::set_guest_channels:
      return "set-guest-channels";
  }
  return "?";
}

std::string_view to_string(DiagnosisKind kind) {
  switch (kind) {
    case DiagnosisKind::trunked:
      return "trunked";
    case DiagnosisKind::misrouted:
      return "misrouted";
    case DiagnosisKind::unexplained:
      return "unexplained";
  }
  return "?";
}

std::optional<std::string> EffectiveMount::option(std::string_view key) const {
  if (auto it = options.find(key); it != options.end()) return it->second;
  return std::nullopt;
}

std::string EffectiveMount::version() const {
  if (auto v = option("vers")) return *v;
  if (auto v = option("nfsvers")) return *v;
  return {};
}

unsigned EffectiveMount::nconnect() const {
  if (auto v = option("nconnect"))
    if (auto n = parse_unsigned(*v)) return *n;
  return 1;
}

std::string EffectiveMount::effective_address() const {
  if (auto a = option("addr"); a && !a->empty()) return *a;
  // "[fd00::1]:/export" or "192.0.2.2:/export"
  const auto colon = device.find(":/");
  return bare_address(device.substr(0, colon == std::string::npos ? device.size() : colon));
}

std::optional<int> nfs4_minor(std::string_view vers) {
  if (vers == "4.0") return 0;
  if (vers == "4.1") return 1;
  if (vers == "4.2") return 2;
  return std::nullopt;
}

bool same_address(std::string_view a, std::string_view b) {
  return bare_address(a) == bare_address(b);
}

const EffectiveMount* find_mount(const NfsEvidence& evidence, std::string_view mount_point) {
  const EffectiveMount* found = nullptr;
  for (const auto& m : evidence.mounts)
    if (m.mount_point == mount_point) found = &m;
  return found;
}

// The preconditions of a proof (the mount, its options, the NIC, the queues). Long because each
// is a short check with its own message and hint, in the order an operator fixes them.
std::vector<Error> check_preconditions(const DesiredPath& d, const NfsEvidence& e, const CounterSnapshot& interfaces) {
  std::vector<Error> out;
  const std::string where = "guest mount " + d.mount_point;

  const auto intended = find_intended(interfaces, d.intended_mac);
  if (intended.candidates.size() > 1) {
    out.push_back(Error{"several interfaces carry the NIC's MAC " + d.intended_mac.str() + " (" +
                            join(intended.candidates, ", ") + "), so its counters cannot be told apart",
                        "guest interfaces",
                        "pathwarden tells a NIC's interface by its permanent address (ethtool -P), else its MAC, "
                        "and leaves VLANs, bonds and bridges (sysfs lower_*) aside; these interfaces have the same "
                        "one: check the guest's MAC overrides (netplan macaddress:, ip link set address)"});
  } else if (!intended.found) {
    out.push_back(Error{"no guest interface has the NIC's MAC " + d.intended_mac.str(), "guest interfaces",
                        "check that the Proxmox NIC is attached and the guest sees it (ip link)"});
  } else if (d.queues && *d.queues > 1) {
    const std::string& name = intended.found->name;
    if (!e.guest_channels) {
      out.push_back(Error{"the combined channel count of " + name + " is unknown", "guest interface " + name,
                          "run `ethtool -l " + name +
                              "` in the guest: not found, install ethtool; no combined channels, the NIC is not "
                              "a multi-queue virtio NIC (queues= on the Proxmox NIC)"});
    } else if (*e.guest_channels < *d.queues) {
      out.push_back(Error{name + " uses " + std::to_string(*e.guest_channels) +
                              " combined channel(s), the policy wants " + std::to_string(*d.queues),
                          "guest interface " + name,
                          "run `ethtool -L " + name + " combined " + std::to_string(*d.queues) +
                              "` and check the NIC's queues in Proxmox"});
    }
  }

  const EffectiveMount* m = find_mount(e, d.mount_point);
  if (!m) {
    out.push_back(Error{d.mount_point + " is not mounted", where,
                        "`pathwarden reconcile` makes a policy's mount; otherwise `mount " + d.mount_point +
                            "` in the guest, and check the guest's fstab"});
    return out;
  }
  if (!m->fstype.starts_with("nfs")) {
    out.push_back(
        Error{d.mount_point + " is a " + m->fstype + " mount, not NFS", where, "check the policy's mount path"});
    return out;
  }
  const std::string addr = m->effective_address();
  if (!is_nas_address(d, addr)) {
    out.push_back(
        Error{d.mount_point + " talks to " + addr + ", which is not " + d.server + " nor another address of its NAS",
              where, "unmount it and mount " + d.server + " (or list " + addr + " in nas_addresses)"});
  }
  if (d.vers && !version_satisfies(m->version(), *d.vers)) {
    out.push_back(Error{d.mount_point + " uses vers=" + (m->version().empty() ? "?" : m->version()) +
                            ", the policy wants vers=" + *d.vers,
                        where, "unmount and mount it again: `mount -o remount` cannot change the NFS version"});
  }
  if (d.nconnect && m->nconnect() != *d.nconnect) {
    // /proc/mounts shows the client's nconnect, not the one this mount asked for: a mount that
    // finds a client for the same address and version shares it whatever its own nconnect
    // (Linux fs/nfs/client.c nfs_match_client compares no nconnect). The one that set it is the
    // first such mount still there (/proc/mounts lists mounts in the order they were made).
    std::string set_by;
    for (const auto& other : e.mounts) {
      if (&other == m) break;
      if (other.fstype.starts_with("nfs") && other.effective_address() == m->effective_address() &&
          other.version() == m->version() && other.nconnect() == m->nconnect()) {
        set_by = other.mount_point;
        break;
      }
    }
    out.push_back(Error{
        d.mount_point + " has nconnect=" + std::to_string(m->nconnect()) +
            ", the policy wants nconnect=" + std::to_string(*d.nconnect) +
            (set_by.empty() ? std::string()
                            : ": it shares the NFS client for " + m->effective_address() + " vers=" + m->version() +
                                  " that " + set_by + " made first with nconnect=" + std::to_string(m->nconnect())),
        where,
        "nconnect only takes effect on the first mount of a server: unmount every mount of " + d.server +
            (set_by.empty() ? std::string() : " (" + set_by + " too)") + " and mount again"});
  } else if (d.nconnect && e.transport_count && *e.transport_count < *d.nconnect) {
    out.push_back(Error{"mountstats lists " + std::to_string(*e.transport_count) + " transport(s) for " +
                            d.mount_point + ", nconnect=" + std::to_string(*d.nconnect) + " wants " +
                            std::to_string(*d.nconnect),
                        where, "unmount every mount of " + d.server + " and mount again"});
  }
  return out;
}

namespace {

struct PathSignals {
  std::string address;             // effective addr=
  bool other_nas_address = false;  // addr= is another address of the same NAS
  std::vector<TransportRefusal> refusals;
  std::vector<const NfsConnection*> to_server, to_other_nas;
  std::vector<const NfsConnection*> off_intended;  // connections to the NAS leaving from another interface
  std::vector<const NfsConnection*> on_intended;   // ... and from the intended one
  std::optional<unsigned> max_connect;
  const EffectiveMount* mount = nullptr;
};

PathSignals read_signals(const DesiredPath& d, const NfsEvidence& e, const net::MacAddress& intended_mac) {
  PathSignals s;
  s.mount = find_mount(e, d.mount_point);
  if (s.mount) {
    s.address = s.mount->effective_address();
    s.other_nas_address = !same_address(s.address, d.server) && contains_address(d.nas_addresses, s.address);
    if (auto mc = s.mount->option("max_connect")) s.max_connect = parse_unsigned(*mc);
  }
  s.refusals = transport_refusals(e, d);
  for (const auto& c : e.connections) {
    if (same_address(c.remote_address, d.server))
      s.to_server.push_back(&c);
    else if (contains_address(d.nas_addresses, c.remote_address))
      s.to_other_nas.push_back(&c);
    else
      continue;
    const bool carries_mount = s.address.empty() || same_address(c.remote_address, s.address);
    if (const auto* o = owner_of(e, c.local_address); carries_mount && o && o->mac.valid() && o->mac != intended_mac)
      s.off_intended.push_back(&c);
    else if (carries_mount && o && o->mac == intended_mac)
      s.on_intended.push_back(&c);
  }
  return s;
}

bool looks_trunked(const PathSignals& s) {
  if (s.other_nas_address) return true;
  // Without /proc/mounts' addr=, a NAS reached only through its other addresses says the same.
  return s.address.empty() && s.to_server.empty() && !s.to_other_nas.empty();
}

void add_counter_evidence(PathDiagnosis& out, const CounterAnalysis& counters, const ProbeRun& probe) {
  if (probe.bytes == 0) return;
  const char* dir = probe.direction == ProbeDirection::read ? "received" : "sent";
  for (const auto& d : counters.deltas) {
    if (d.issue != CounterIssue::none && d.issue != CounterIssue::no_baseline) continue;
    if (d.upper_device) continue;
    const double share = static_cast<double>(d.net(probe.direction)) / static_cast<double>(probe.bytes);
    if (!d.intended && share < 0.05) continue;
    out.evidence.push_back(d.name + (d.intended ? " (intended)" : "") + " " + dir + " " +
                           text::bytes(static_cast<double>(d.net(probe.direction))) + " beyond its background, " +
                           text::percent(share) + " of the probe's " +
                           text::binary_bytes(static_cast<double>(probe.bytes)));
  }
}

}  // namespace

PathDiagnosis diagnose(const DesiredPath& d, const NfsEvidence& e, const CounterAnalysis* counters,
                       const ProbeRun* probe) {
  PathDiagnosis out;
  const PathSignals s = read_signals(d, e, d.intended_mac);
  if (counters && probe) add_counter_evidence(out, *counters, *probe);

  if (s.mount && s.other_nas_address)
    out.evidence.push_back("/proc/mounts: " + d.mount_point + " has addr=" + s.address +
                           ", another address of the NAS, not " + d.server);
  for (const auto& r : s.refusals) out.evidence.push_back("kernel: " + r.line);
  {
    const std::size_t n = s.to_server.size() + s.to_other_nas.size();
    std::string line = "ss: " + std::to_string(n) + " connection(s) to the NAS";
    std::vector<std::string> parts;
    for (const auto* c : s.to_server) parts.push_back(describe_connection(e, *c));
    for (const auto* c : s.to_other_nas) parts.push_back(describe_connection(e, *c));
    if (!parts.empty()) line += ": " + join(parts, ", ");
    out.evidence.push_back(line);
  }
  if (e.transport_count)
    out.evidence.push_back("mountstats: " + std::to_string(*e.transport_count) + " transport(s) for " + d.mount_point);

  if (looks_trunked(s)) {
    out.kind = DiagnosisKind::trunked;
    const auto mounts = v41_mounts_of_nas(d, e);
    // First where it applies (an IPv4 address: the kernel's dstaddr takes no other): NFSv4 kept.
    if (d.server.find(':') == std::string::npos && (s.address.empty() || s.address.find(':') == std::string::npos))
      out.remedies.push_back(
          {RemedyKind::move_transport,
           "keep NFSv4: set spec.mount.trunking: move-transport, and pathwarden moves the NAS's NFS client from " +
               (s.address.empty() ? std::string("the other address") : s.address) + " to " + d.server +
               " (sunrpc dstaddr, Linux 5.14+, no remount) and points the NAS's fstab entries at " + d.server,
           mounts});
    out.remedies.push_back({RemedyKind::pin_nfs_v3,
                            "pin vers=3 on " + d.mount_point +
                                " (NFSv3 has no trunking detection: the address asked for is the address used) and "
                                "write the reason next to it",
                            {d.mount_point}});
    out.remedies.push_back({RemedyKind::remount_all_of_server,
                            "unmount every NFSv4.1+ mount of this NAS (" + join(mounts, ", ") + ") and mount " +
                                d.mount_point + " via " + d.server + " first; the others then share its transport",
                            mounts});
    if (s.max_connect && *s.max_connect > 1)
      out.remedies.push_back({RemedyKind::drop_max_connect,
                              "drop max_connect=" + std::to_string(*s.max_connect) +
                                  ": it spreads RPCs over every known address of the NAS and never moves them to " +
                                  d.server + " alone",
                              {d.mount_point}});
    return out;
  }

  const bool right_address = s.mount ? same_address(s.address, d.server) : !s.to_server.empty();
  if (!right_address) return out;
  // The kernel talks to the right address, so the link is chosen by routing.
  std::string intended_name;
  if (counters)
    if (const auto* i = counters->intended()) intended_name = i->name;
  if (!s.off_intended.empty()) {
    out.kind = DiagnosisKind::misrouted;
    const auto* o = owner_of(e, s.off_intended.front()->local_address);
    out.evidence.push_back("the connection to " + d.server + ":2049 leaves from " +
                           s.off_intended.front()->local_address + ", an address of " +
                           (o ? o->interface_name : std::string("another interface")));
    out.remedies.push_back({RemedyKind::fix_route,
                            "make `ip route get " + d.server + "` answer `dev " +
                                (intended_name.empty() ? std::string("<intended interface>") : intended_name) +
                                "`: put " + d.server +
                                " in that link's subnet or add a host route through it, "
                                "then re-make the mount so its connection is re-established",
                            {d.mount_point}});
    return out;
  }
  if (!counters || !probe) return out;
  out.kind = DiagnosisKind::misrouted;
  const bool from_intended = std::any_of(s.to_server.begin(), s.to_server.end(), [&](const NfsConnection* c) {
    const auto* o = owner_of(e, c->local_address);
    return o && o->mac == d.intended_mac;
  });
  const std::string via = intended_name.empty() ? std::string("the intended interface") : intended_name;
  if (from_intended && probe->direction == ProbeDirection::read) {
    // Requests leave from the intended link's address, replies come back another way.
    out.evidence.push_back("the connection leaves from " + via +
                           " but the replies arrive on another link: an asymmetric route");
    out.remedies.push_back({RemedyKind::fix_return_route,
                            "fix the NAS's route back to the guest's address on " + via +
                                " (and check rp_filter), so replies return the way requests left",
                            {d.mount_point}});
    return out;
  }
  out.evidence.push_back("addr=" + s.address +
                         " is the desired server, so the route decides which link the bytes take");
  out.remedies.push_back({RemedyKind::fix_route,
                          "make `ip route get " + d.server + "` answer `dev " + via +
                              "` (a host route or the link's subnet), "
                              "then re-make the mount so its connection is re-established",
                          {d.mount_point}});
  return out;
}

SignalReading judge_connection_interface(const DesiredPath& d, const NfsEvidence& e) {
  SignalReading r{Signal::connection_interface, SignalState::unavailable, {}};
  const PathSignals s = read_signals(d, e, d.intended_mac);
  if (looks_trunked(s)) {
    r.state = SignalState::contradicted;
    r.detail = d.mount_point + " uses " +
               (s.address.empty() ? std::string("another address of the NAS") : "addr=" + s.address) + ", not " +
               d.server + ": its RPCs ride that address's connection (NFSv4.1 trunking)";
    return r;
  }
  if (!s.off_intended.empty()) {
    r.state = SignalState::contradicted;
    r.detail = "the connection " + describe_connection(e, *s.off_intended.front()) + " leaves from another interface";
    return r;
  }
  if (e.local_addresses.empty()) {
    r.detail = "the guest's addresses (ip -o addr) are unknown: no connection can be tied to an interface";
    return r;
  }
  if (!s.on_intended.empty()) {
    r.state = SignalState::agreed;
    r.detail =
        "the connection " + describe_connection(e, *s.on_intended.front()) + " leaves from the intended interface";
    return r;
  }
  r.state = SignalState::undecided;
  r.detail = s.to_server.empty() && s.to_other_nas.empty()
                 ? "no connection to the NAS was seen"
                 : "the mount's connections leave from addresses of no single known NIC (a bond of several?)";
  return r;
}

std::optional<EffectiveTransports> effective_transports(const DesiredPath& d, const NfsEvidence& e) {
  const EffectiveMount* m = nullptr;
  for (const auto& x : e.mounts) {
    if (x.mount_point == d.mount_point) m = &x;  // stacked: the last one is in effect
  }
  if (m == nullptr) return std::nullopt;
  EffectiveTransports t;
  t.asked = d.nconnect;
  t.nconnect = m->nconnect();
  t.mountstats = e.transport_count;
  t.kernel = e.client_transports;
  t.addresses = e.client_addresses;
  return t;
}

std::string describe(const EffectiveTransports& t) {
  const auto in_effect = t.kernel ? t.kernel : t.mountstats ? t.mountstats : t.nconnect;
  std::vector<std::string> parts;
  if (t.nconnect) parts.push_back("nconnect=" + std::to_string(*t.nconnect));
  if (t.mountstats) parts.push_back(std::to_string(*t.mountstats) + " transport(s) in mountstats");
  if (t.kernel) parts.push_back("the kernel's client: " + std::to_string(*t.kernel) + " to " + join(t.addresses, ", "));
  std::string out = "connections in effect: " + (in_effect ? std::to_string(*in_effect) : std::string("unknown"));
  if (!parts.empty()) out += " (" + join(parts, "; ") + ")";
  if (t.asked) out += ", " + std::to_string(*t.asked) + " asked";
  return out;
}

}  // namespace pw::verify
