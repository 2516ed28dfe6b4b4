#include "util/crypto.hpp"

#include <openssl/sha.h>
#include <sodium.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace gpunex::util {

void init_crypto() {
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialise");
}

std::string random_token(std::size_t n_bytes) {
  std::vector<unsigned char> buf(n_bytes);
  randombytes_buf(buf.data(), buf.size());
  std::string out(sodium_base64_ENCODED_LEN(n_bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), buf.data(), buf.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.find('\0'));
  sodium_memzero(buf.data(), buf.size());
  return out;
}

std::string new_id(std::string_view prefix) {
  std::array<unsigned char, 10> buf{};
  randombytes_buf(buf.data(), buf.size());
  std::string hex(buf.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), buf.data(), buf.size());
  hex.pop_back();
  return std::string(prefix) + "_" + hex;
}

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  std::string hex(digest.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  hex.pop_back();
  return hex;
}

std::string hash_password(std::string_view password) {
  std::array<char, crypto_pwhash_STRBYTES> out{};
  if (crypto_pwhash_str_alg(out.data(), password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                            crypto_pwhash_MEMLIMIT_INTERACTIVE, crypto_pwhash_ALG_ARGON2ID13) != 0) {
    throw std::runtime_error("out of memory while hashing a password");
  }
  return std::string(out.data());
}

bool verify_password(std::string_view password, const std::string& hash) {
  if (hash.size() >= crypto_pwhash_STRBYTES) return false;
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  // Compare hashes so the time does not depend on where the inputs differ, nor on their lengths.
  std::array<unsigned char, SHA256_DIGEST_LENGTH> da{}, db{};
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), da.data());
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), db.data());
  return sodium_memcmp(da.data(), db.data(), da.size()) == 0;
}

}  // namespace gpunex::util
