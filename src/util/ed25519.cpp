#include "util/ed25519.hpp"

#include <sodium.h>

namespace gpunex::util {

Ed25519Signature ed25519_sign(const Ed25519Secret& secret, const std::vector<std::uint8_t>& message) {
  Ed25519Signature sig{};
  crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), secret.data());
  return sig;
}

bool ed25519_verify(const Ed25519Public& key, const Ed25519Signature& sig, const std::vector<std::uint8_t>& message) {
  return crypto_sign_verify_detached(sig.data(), message.data(), message.size(), key.data()) == 0;
}

Ed25519Secret ed25519_from_seed(const std::array<std::uint8_t, 32>& seed) {
  Ed25519Public pk{};
  Ed25519Secret sk{};
  crypto_sign_seed_keypair(pk.data(), sk.data(), seed.data());
  return sk;
}

Ed25519Public ed25519_public(const Ed25519Secret& secret) {
  Ed25519Public pk{};
  crypto_sign_ed25519_sk_to_pk(pk.data(), secret.data());
  return pk;
}

std::array<std::uint8_t, 32> sha256_parts(const std::vector<std::string_view>& parts) {
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  for (auto p : parts) crypto_hash_sha256_update(&st, reinterpret_cast<const unsigned char*>(p.data()), p.size());
  std::array<std::uint8_t, 32> out{};
  crypto_hash_sha256_final(&st, out.data());
  return out;
}

}  // namespace gpunex::util
