// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace pw::guest {

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL SHA-256 failed");  // only when libcrypto itself is broken
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace pw::guest
