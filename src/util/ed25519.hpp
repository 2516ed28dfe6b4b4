#pragma once
// Ed25519 signing (libsodium) and SHA-256 in the shapes the Solana payout builder takes
// (core/solana.hpp): a Solana keypair is 64 bytes, the secret seed then the public key, which is
// libsodium's secret-key layout.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace gpunex::util {

using Ed25519Secret = std::array<std::uint8_t, 64>;
using Ed25519Public = std::array<std::uint8_t, 32>;
using Ed25519Signature = std::array<std::uint8_t, 64>;

//! RFC 8032 signature of `message` (deterministic: the same bytes for the same key and message).
Ed25519Signature ed25519_sign(const Ed25519Secret& secret, const std::vector<std::uint8_t>& message);
bool ed25519_verify(const Ed25519Public& key, const Ed25519Signature& sig, const std::vector<std::uint8_t>& message);
//! The keypair of a 32-byte seed.
Ed25519Secret ed25519_from_seed(const std::array<std::uint8_t, 32>& seed);
Ed25519Public ed25519_public(const Ed25519Secret& secret);

//! SHA-256 of the parts one after the other (core::solana::Sha256).
std::array<std::uint8_t, 32> sha256_parts(const std::vector<std::string_view>& parts);

}  // namespace gpunex::util
