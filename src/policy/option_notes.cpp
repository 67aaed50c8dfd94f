// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/option_notes.hpp"

namespace pw::policy {

std::vector<OptionNote> option_notes(const MountSpec& mount) {
  std::vector<OptionNote> out;
  const auto version = mount.nfs_version();
  const bool read_only = mount.option("ro") != nullptr;

  if (mount.option("async")) {
    std::string m =
        "'async' changes nothing on a Linux client: it is already the default, and it does not make the server "
        "acknowledge writes before they reach stable storage. That is the export's own 'async' (/etc/exports) or, on "
        "ZFS, the dataset's 'sync' property (e.g. 'zfs set sync=disabled'), which no client option changes";
    if (!mount.reason.empty()) m += " (the policy's reason: \"" + mount.reason + "\")";
    out.push_back({"async", std::move(m)});
  }
  if (mount.option("nolock")) {
    if (!version) {
      out.push_back({"nolock",
                     "'nolock' has no effect when the client negotiates NFSv4 (with no vers= it tries 4.2 first): "
                     "locking is part of NFSv4; it turns off NLM only on an NFSv3 mount. Give vers= to say which"});
    } else if (version->starts_with("4")) {
      out.push_back({"nolock", "'nolock' has no effect on NFSv" + *version +
                                   ": locking is part of NFSv4 itself; it turns off NLM only for vers=3"});
    }
  }
  if (mount.option("soft") && !read_only) {
    out.push_back({"soft",
                   "'soft' on a read-write mount: after 'retrans' timeouts the client fails the call with EIO, and "
                   "nfs(5) warns it can cause silent data corruption (a write the application thought done may be "
                   "lost); use 'hard' (the default) for data that is written, or make the mount 'ro'"});
  }
  return out;
}

}  // namespace pw::policy
