// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>
#include <string_view>

namespace pw::guest {

// Lower-case hex SHA-256, the form Ansible's stat (checksum_algorithm: sha256) reports; the hash
// of an fstab as observed is the compare-and-swap token of every write.
std::string sha256_hex(std::string_view bytes);

}  // namespace pw::guest
