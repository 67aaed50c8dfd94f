// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A fresh self-signed server certificate for every pvesim run (Proxmox ships self-signed ones too).
#include <string>

namespace pvesim {

struct SelfSignedCertificate {
  std::string cert_pem;
  std::string key_pem;
  std::string fingerprint;  // SHA-256, colon-hex, upper case (like pvenode cert info)
};

// CN=pvesim with subjectAltName DNS:localhost, IP:127.0.0.1, IP:::1. Throws on OpenSSL failure.
SelfSignedCertificate make_self_signed_certificate();

}  // namespace pvesim
