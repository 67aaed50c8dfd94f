// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the guest's kernel says about an NFS path besides the counters: effective mount options,
// connections to port 2049, transports, kernel messages, channels. Preconditions and the
// trunked-vs-misrouted diagnosis are pure functions over it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "net/mac_address.hpp"
#include "verify/counters.hpp"
#include "verify/signals.hpp"

namespace pw::verify {

using MountOptionMap = std::map<std::string, std::string, std::less<>>;

// One NFS line of /proc/mounts.
struct EffectiveMount {
  std::string device;  // "198.51.100.2:/export2": may name the address asked for, not the one used
  std::string mount_point;
  std::string fstype;      // nfs | nfs4
  MountOptionMap options;  // "vers" → "4.2"; flags such as "hard" map to ""

  std::optional<std::string> option(std::string_view key) const;
  std::string version() const;  // vers= or nfsvers=; "" when absent
  unsigned nconnect() const;    // 1 when absent (the kernel hides nconnect=1)
  // The address the kernel really talks to: addr=, else the device's server part.
  std::string effective_address() const;
};

// An established TCP connection to port 2049, as `ss` shows it.
struct NfsConnection {
  std::string local_address;
  std::uint16_t local_port = 0;
  std::string remote_address;
  std::uint16_t remote_port = 2049;
};

// A guest address and the interface that owns it (`ip -o addr`).
struct LocalAddress {
  std::string address;
  std::string interface_name;
  net::MacAddress mac;  // identity of the NIC below that interface; empty when there is no single one
};

// The path a policy wants. Addresses are IP addresses (names resolved by the caller).
struct DesiredPath {
  net::MacAddress intended_mac;  // the Proxmox NIC's MAC
  std::string mount_point;
  std::string probe_file;                  // absolute path in the guest
  std::uint64_t probe_bytes = 0;           // the policy's first probe: the file must hold at least this
  std::string server;                      // the address the policy mounts
  std::vector<std::string> nas_addresses;  // the same NAS's other addresses
  std::optional<std::string> vers;         // "3", "4", "4.1", "4.2"; absent: not pinned
  std::optional<unsigned> nconnect;
  std::optional<unsigned> queues;  // combined channels wanted on the intended NIC
};

struct NfsEvidence {
  std::vector<EffectiveMount> mounts;      // every NFS mount of the guest
  std::vector<NfsConnection> connections;  // every established connection to port 2049
  std::vector<LocalAddress> local_addresses;
  std::optional<unsigned> transport_count;  // `xprt:` lines of the policy's mount in mountstats
  // The kernel's NFS client of the mount as sunrpc's sysfs shows it (Linux 5.14+; unknown before,
  // or through the agent's file reads): its transports to port 2049 and their addresses.
  std::optional<unsigned> client_transports;
  std::vector<std::string> client_addresses;
  std::vector<std::string> kernel_messages;  // dmesg lines; unrelated lines are ignored
  std::optional<unsigned> guest_channels;    // current combined channels of the intended NIC
};

// The NFS connections a mount really has, beside the ones its policy asks (issue 44): the client's
// nconnect= in /proc/mounts, the mount's transports in mountstats, and the kernel's client.
// `nfs_match_client` gives a later mount of an address and version the client the first one
// made, whatever nconnect it asks; trunking adds transports to other addresses.
struct EffectiveTransports {
  std::optional<unsigned> asked;       // the policy's nconnect; none: not asked
  std::optional<unsigned> nconnect;    // /proc/mounts (1 when the kernel hides it); none: not mounted
  std::optional<unsigned> mountstats;  // `xprt:` lines of the mount
  std::optional<unsigned> kernel;      // sunrpc: the client's transports to port 2049
  std::vector<std::string> addresses;  // their destination addresses, each once
};

// "connections in effect: 1 (nconnect=1; 1 transport in mountstats; the kernel's client: 1 to
// 198.51.100.2), 8 asked": one line for the reports.
std::string describe(const EffectiveTransports& t);
// The mount's transports as the evidence shows them; nullopt when it is not mounted.
std::optional<EffectiveTransports> effective_transports(const DesiredPath& d, const NfsEvidence& e);

enum class RemedyKind {
  move_transport,         // keep NFSv4: move the client's transports to the address (spec.mount.trunking)
  pin_nfs_v3,             // NFSv3 has no trunking detection
  remount_all_of_server,  // every v4.1+ mount of that NAS down, the desired address first
  drop_max_connect,
  fix_route,           // the guest's route to the server
  fix_return_route,    // the NAS's route back (asymmetric path)
  remount,             // options that only a fresh mount applies
  set_guest_channels,  // ethtool -L
};

std::string_view to_string(RemedyKind kind);

struct Remedy {
  RemedyKind kind;
  std::string text;                       // what to do, for a human
  std::vector<std::string> mount_points;  // the mounts it concerns, for the planner
};

enum class DiagnosisKind {
  trunked,      // NFSv4.1+ reused the transport of another address of the same NAS
  misrouted,    // the mount talks to the right address, but the bytes take another link
  unexplained,  // bytes elsewhere and nothing in the evidence says why
};

std::string_view to_string(DiagnosisKind kind);

struct PathDiagnosis {
  DiagnosisKind kind = DiagnosisKind::unexplained;
  std::vector<std::string> evidence;  // each line one observed fact
  std::vector<Remedy> remedies;
};

// The mount at the policy's mount point (the last one when mounts are stacked).
const EffectiveMount* find_mount(const NfsEvidence& evidence, std::string_view mount_point);

// True when a and b name the same IP address ("[fd00::1]" and "FD00::1" do).
bool same_address(std::string_view a, std::string_view b);

// Everything that must hold before a probe can prove anything: the mount is there with the
// desired address and options, the intended NIC exists (by MAC) with enough channels.
// A mount whose effective address is another address of the same NAS is not a failed
// precondition: it is the trunking symptom the probe and the diagnosis are for.
std::vector<Error> check_preconditions(const DesiredPath& desired, const NfsEvidence& evidence,
                                       const CounterSnapshot& interfaces);

// Why the bytes did not take the intended link. counters may be null (audit without a probe).
PathDiagnosis diagnose(const DesiredPath& desired, const NfsEvidence& evidence, const CounterAnalysis* counters,
                       const ProbeRun* probe);

// The connection → interface signal: the mount's connection leaves from the intended NIC
// (agreed), or the mount rides another address's transport / leaves from another NIC
// (contradicted), whatever any counter says.
SignalReading judge_connection_interface(const DesiredPath& desired, const NfsEvidence& evidence);

// "4.2" → 2, "4.1" → 1, "4.0" → 0; nullopt for "3", "4" (negotiated) or anything else.
std::optional<int> nfs4_minor(std::string_view vers);

}  // namespace pw::verify
