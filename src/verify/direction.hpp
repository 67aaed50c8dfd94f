// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which way a probe moves its bytes, the one name for it from policy to verdict: read brings
// them into the guest (its interfaces' rx), write sends them out (tx).
namespace pw::verify {

enum class ProbeDirection { read, write };

constexpr const char* to_string(ProbeDirection d) {
  return d == ProbeDirection::read ? "read" : "write";
}

}  // namespace pw::verify
