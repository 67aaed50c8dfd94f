// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Base64 as the guest agent path uses it: QGA sends output and file data base64-encoded
// (guest-exec-status out-data/err-data, guest-file-read buf-b64) and qemu-server decodes it with
// Perl's MIME::Base64 (PVE/QemuServer/Agent.pm qemu_exec_status; PVE/API2/Qemu/Agent.pm
// file-read), which skips characters outside the alphabet and stops at '='.
#include <string>
#include <string_view>

namespace pvesim {

std::string base64_encode(std::string_view bytes);
// MIME::Base64 decode_base64: lenient, never fails.
std::string base64_decode(std::string_view text);

}  // namespace pvesim
