// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The policy format as plain structs: what users write in policies/*.yaml (kind: StoragePath).
// See policies/README.md; the controller's own settings (kind: Controller) are src/settings.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnostics/error.hpp"
#include "policy/time_window.hpp"
#include "verify/direction.hpp"

namespace pw::policy {

struct GuestRef {
  std::string node;  // Proxmox node that owns the VM
  int vmid = 0;
  std::string host;  // Ansible inventory name of the guest
};

struct NicSpec {
  std::string device;         // Proxmox NIC key: net0..net31
  std::optional<int> queues;  // virtio queues (1..64); absent = not managed
  // The MTU the guest interface and the path to the NAS must carry (576..65520); absent = the
  // interface's own MTU is only probed along the path. Checked, never set (plan/mtu_checks.cpp).
  std::optional<int> mtu;
};

struct MountOption {
  std::string name;
  std::optional<std::string> value;

  std::string to_string() const { return value ? name + "=" + *value : name; }
  friend bool operator==(const MountOption&, const MountOption&) = default;
};

// Who makes the mount. pathwarden writes fstab entries only for its own (fstab); a mount made by
// Docker (a Compose volume's driver_opts), by a systemd .mount unit or by autofs is observed and
// proven, and drift there is reported with the remedy, never written (README, "Docker Compose
// volumes, autofs and systemd mounts").
enum class MountOwner : std::uint8_t { fstab, compose, systemd, autofs };
std::string_view to_string(MountOwner owner);  // as written in policies: "fstab", "compose", ...
inline constexpr std::array<std::string_view, 4> kMountOwners{"fstab", "compose", "systemd", "autofs"};

// What the policy does about NFSv4.1+ trunking: a mount of one address of a NAS the guest already
// reaches through another address joins that address's NFS client and keeps its link
// (policies/README.md, "spec.mount.trunking"). Not written: today's behaviour, a warning at
// planning and the probe's verdict.
enum class TrunkingRemedy : std::uint8_t {
  move_transport,  // keep NFSv4: move the client's transports to the policy's address, fstab too
  nfsv3,           // the policy pins NFSv3, which does not trunk (checked: vers=3 is required)
  refuse,          // never apply a change that trunks or would: a blocker with the remedies
};
std::string_view to_string(TrunkingRemedy remedy);  // as written: "move-transport", "nfsv3", "refuse"
inline constexpr std::array<std::string_view, 3> kTrunkingRemedies{"move-transport", "nfsv3", "refuse"};

// Docker's local volumes live under DATA_ROOT/volumes/NAME/_data (data-root /var/lib/docker by
// default, ~/.local/share/docker rootless): a mount there is Docker's.
bool is_docker_volume_path(std::string_view path);

// A Compose project's named volume (`volumes: NAME: driver_opts: ...`). Docker names it
// PROJECT_VOLUME unless the file sets `name:`; pathwarden finds it by Compose's own labels
// (com.docker.compose.project / .volume), which hold either way.
struct ComposeVolume {
  std::string project;
  std::string volume;
  std::string docker_name() const { return project + "_" + volume; }
  friend bool operator==(const ComposeVolume&, const ComposeVolume&) = default;
};

struct MountSpec {
  MountOwner owner = MountOwner::fstab;
  std::optional<ComposeVolume> compose;    // owner compose: which volume; its path is Docker's
  std::string server;                      // address (or name) the mount must use
  std::vector<std::string> nas_addresses;  // the same NAS's other addresses: trunking risk
  std::string export_path;                 // "/volume1/movies"
  std::string path;                        // mount point in the guest (compose: found at observation)
  std::vector<MountOption> options;        // in the order written
  std::string reason;                      // why the options are what they are; goes into fstab
  std::optional<TrunkingRemedy> trunking;  // not written: warn, and let the probe decide

  // Effective protocol version as written ("3", "4.2"), from vers= or nfsvers=; nullopt = default.
  std::optional<std::string> nfs_version() const;
  std::optional<int> nconnect() const;
  const MountOption* option(std::string_view name) const;
  std::string options_string() const;                        // "vers=3,nconnect=8,_netdev"
  bool owned() const { return owner == MountOwner::fstab; }  // pathwarden writes its fstab entry
  // How reports name the mount: its path, or "Compose volume pg_pgdata" before it is observed.
  std::string display() const;
};

using verify::ProbeDirection;  // one name from policy to verdict

struct VerifySpec {
  std::string probe_file;                      // relative to the mount path
  std::uint64_t probe_bytes = 256ull << 20;    // first probe
  std::uint64_t max_probe_bytes = 1ull << 30;  // adaptive probe bound; default 4 x probe_bytes
  double min_share = 0.9;                      // share of probe bytes the intended NIC must carry
  ProbeDirection direction = ProbeDirection::read;
  // A read probe runs as the SSH user (the probe file is world-readable); root (with
  // spec.ansible.become) only where the policy says so. A write probe always becomes root.
  bool probe_as_root = false;
  std::chrono::milliseconds baseline{2000};  // window for learning background rates
  // Commit-latency figure (like pg_test_fsync): this many 8 KiB O_DSYNC writes on the mount
  // after the probe; 0 = none. A figure in the report, a verdict only with min_commit_rate.
  int commit_cycles = 0;
  std::optional<double> min_commit_rate;  // commits per second the path must reach
};

struct RestartSpec {
  bool allowed = false;
  std::optional<TimeWindow> window;  // absent = any time (when allowed)
};

struct RollbackSpec {
  bool on_inconclusive = true;  // an unproven change is undone unless the policy says otherwise
  bool verify_restored = true;  // re-verify the old state after rolling back
};

// Where each field of a policy was written ("spec.mount.path" → file:line:col), for messages of
// later stages. Small on purpose: a fleet loads 10,000 policies, every field of one sits in the
// same file, and the field names are few (each is kept once for all policies).
class FieldPositions {
 public:
  class Slot {
   public:
    Slot& operator=(const SourcePos& pos) {
      owner_.set(field_, pos);
      return *this;
    }

   private:
    friend class FieldPositions;
    Slot(FieldPositions& owner, std::string_view field) : owner_(owner), field_(field) {}
    FieldPositions& owner_;
    std::string_view field_;
  };

  // Iterates like the map it replaces, in field order: (field, position) pairs, by value.
  class const_iterator {  // NOLINT(readability-identifier-naming): the standard library's name for it
   public:
    using value_type = std::pair<const std::string&, SourcePos>;
    const_iterator(const FieldPositions& owner, std::size_t i) : owner_(&owner), i_(i) {}
    value_type operator*() const { return {*owner_->entries_[i_].field, owner_->at(i_)}; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    friend bool operator==(const const_iterator&, const const_iterator&) = default;

   private:
    const FieldPositions* owner_;
    std::size_t i_;
  };

  Slot operator[](std::string_view field) { return {*this, field}; }
  void set(std::string_view field, const SourcePos& pos);
  std::optional<SourcePos> find(std::string_view field) const;
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const_iterator begin() const { return {*this, 0}; }
  const_iterator end() const { return {*this, entries_.size()}; }

 private:
  struct Entry {
    const std::string* field;  // interned: one string per field name for the whole process
    std::uint32_t file;        // index into files_
    int line;
    int column;
  };
  SourcePos at(std::size_t i) const;

  std::vector<std::string> files_;  // nearly always one
  std::vector<Entry> entries_;      // sorted by field
};

struct StoragePath {
  std::string name;                           // metadata.name, unique
  std::map<std::string, std::string> labels;  // metadata.labels, for --selector
  GuestRef guest;
  NicSpec nic;
  MountSpec mount;
  VerifySpec verify;
  RestartSpec restart;
  RollbackSpec rollback;
  SourcePos source;  // where the document starts, for messages
  // Where each field was written ("spec.mount.path" → file:line:col), so later stages can
  // point at the line a problem comes from.
  FieldPositions positions;

  // Position of a field, or of the document when the field was not written.
  SourcePos position_of(std::string_view field) const;
};

// Parses "256MiB", "1GiB", "64MB", "1048576" into bytes.
Result<std::uint64_t> parse_byte_size(std::string_view text);
// Parses "30s", "500ms", "2m" into milliseconds.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace pw::policy
