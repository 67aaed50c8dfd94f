// SPDX-License-Identifier: GPL-3.0-or-later
#include "certificate.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace pvesim {
namespace {

template <class T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("certificate generation failed: ") + what);
}

void add_extension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::string bio_string(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace

SelfSignedCertificate make_self_signed_certificate() {
  PKey key(EVP_EC_gen("P-256"));
  check(key != nullptr, "key");
  Cert cert(X509_new());
  check(cert != nullptr, "x509");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7F;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7L * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("pvesim"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("pvesim"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key.get());
  add_extension(cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign");
  add_extension(cert.get(), NID_ext_key_usage, "serverAuth");
  add_extension(cert.get(), NID_subject_key_identifier, "hash");
  add_extension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1");
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "sign");

  SelfSignedCertificate out;
  Bio cert_bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(cert_bio.get(), cert.get());
  out.cert_pem = bio_string(cert_bio.get());
  Bio key_bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  out.key_pem = bio_string(key_bio.get());

  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  X509_digest(cert.get(), EVP_sha256(), md, &len);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned int i = 0; i < len; ++i) {
    if (i != 0) out.fingerprint += ':';
    out.fingerprint += kHex[md[i] >> 4];
    out.fingerprint += kHex[md[i] & 0xF];
  }
  return out;
}

}  // namespace pvesim
