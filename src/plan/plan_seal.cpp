// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/plan_seal.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>

namespace pw::plan {
namespace json = boost::json;
namespace {

constexpr std::string_view kAlgorithm = "HMAC-SHA-256";

std::string hmac_hex(const json::object& plan, std::string_view key) {
  json::object unsealed = plan;
  unsealed.erase(kSealKey);
  const std::string text = json::serialize(unsealed);
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac.data(), &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

}  // namespace

void seal(json::object& plan, std::string_view key) {
  plan[kSealKey] = json::object{{"alg", kAlgorithm}, {"value", hmac_hex(plan, key)}};
}

Status check_seal(const json::object& plan, std::string_view key, const std::string& where) {
  const auto* s = plan.if_contains(kSealKey);
  if (s == nullptr) {
    return fail("the plan has no seal: written by a pathwarden before plan format 1.4, or not by pathwarden", where,
                "make the plan again with 'pathwarden plan --out FILE' on this controller");
  }
  const auto* o = s->if_object();
  const auto* alg = o ? o->if_contains("alg") : nullptr;
  const auto* value = o ? o->if_contains("value") : nullptr;
  if (alg == nullptr || !alg->is_string() || alg->get_string() != kAlgorithm || value == nullptr ||
      !value->is_string()) {
    return fail("the plan's 'seal' is not {\"alg\": \"HMAC-SHA-256\", \"value\": HEX}", where,
                "make the plan again with 'pathwarden plan --out FILE'");
  }
  const std::string want = hmac_hex(plan, key);
  const auto& got = value->get_string();
  if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
    return fail(
        "the plan's 'seal' does not match its content: the file was changed after pathwarden wrote it, or "
        "another controller (another state directory's plan key) made it; nothing was applied",
        where, "review and make the plan again with 'pathwarden plan --out FILE' on this controller");
  }
  return {};
}

}  // namespace pw::plan
