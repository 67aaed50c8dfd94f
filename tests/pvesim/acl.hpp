// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Path-based permissions as Proxmox works them out, for pvesim's tokens and users.
//
// An ACL entry grants privileges on a path, propagated to the paths below it or not. The
// privileges on a path come from the deepest level of that path (from `/` down to the path itself)
// where the principal has an entry that applies there (the path itself: every entry; a parent:
// propagated entries only); a deeper level replaces what the levels above gave
// (pve-access-control src/PVE/AccessControl.pm, sub roles, read at 5ccd07d9). Roles are flattened
// into their privileges here: an entry is a privilege list, which is what a role is.
//
// A token's own ACL entries are what it gets (a privilege-separated token). Proxmox intersects
// them with the user's (src/PVE/RPCEnvironment.pm, sub permissions); pvesim does that only when the
// token's user is defined with --user (otherwise the user is taken to hold everything), and a
// token whose `privsep` is off gets its user's privileges.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pvesim {

struct AclEntry {
  std::string path;  // "/", "/vms", "/sdn/zones/localnetwork/vmbr1/20"
  std::set<std::string> privileges;
  bool propagate = true;
};

using Acl = std::vector<AclEntry>;

// The privileges the entries give on `path`, as sub roles composes them: privilege -> whether an
// entry giving it propagates.
std::map<std::string, bool> privileges_at(const Acl& acl, std::string_view path);

// "/a/b/" and "a//b" become "/a/b"; "" becomes "/".
std::string normalize_acl_path(std::string_view path);

// Parses "PATH:PRIV,PRIV[:0]" (0 = not propagated), e.g. "/sdn/zones/localnetwork/vmbr1:SDN.Use".
// Returns "" or what is wrong.
std::string parse_acl_entry(const std::string& text, AclEntry& out);

// The SDN.Use paths Proxmox checks for a netN value with this bridge, tag and trunks
// (pve-guest-common src/PVE/GuestHelpers.pm, sub check_vnet_access, read at 4a8f6cbf): the tag's
// path when tagged, one path per trunk VLAN (ranges "10-12" expanded, "a;b" lists), the bridge's
// path otherwise. `zone` is the bridge's SDN zone, "localnetwork" for a plain Linux bridge.
std::vector<std::string> vnet_access_paths(const std::string& zone, const std::string& bridge, const std::string& tag,
                                           const std::string& trunks);

}  // namespace pvesim
