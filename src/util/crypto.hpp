#pragma once
// Randomness, hashing and sealing (libsodium, OpenSSL). Call init_crypto() once at start-up.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpunex::util {

//! Initialises libsodium; throws if it cannot.
void init_crypto();
//! n random bytes, encoded base64url without padding.
std::string random_token(std::size_t n_bytes);
//! Uniform in [0, 1), 53 random bits from the OS's CSPRNG (libsodium): for times an outsider must not guess.
double random_unit();
//! Like random_token (system randomness, base64url), but read from a per-thread buffer that is refilled
//! 4 KiB at a time: one getrandom call per few hundred tokens instead of one per token. For values that
//! must not be guessable yet are no secret of the server's (request ids), never for keys or passwords.
std::string buffered_random_token(std::size_t n_bytes);
//! A new opaque id such as "usr_3f9a..." (prefix + 20 random hex chars).
std::string new_id(std::string_view prefix);
//! Lower-case hex SHA-256 of the input.
std::string sha256_hex(std::string_view data);
//! argon2id hash in libsodium's string format (interactive limits).
std::string hash_password(std::string_view password);
//! Checks a password against hash_password()'s output, in constant time.
bool verify_password(std::string_view password, const std::string& hash);
//! Lower-case hex BLAKE2b-256 of `data` in a named `context`: a one-way name for a secret that differs
//! per context, so it never equals a key derived from the same secret elsewhere.
std::string secret_hash_hex(std::string_view context, std::string_view secret);
//! `plaintext` encrypted and authenticated (libsodium secretbox, random nonce) under a key derived
//! from `secret` in `context`; base64. Only someone holding `secret` can read it back.
std::string seal(std::string_view context, std::string_view secret, std::string_view plaintext);
//! seal()'s inverse; nullopt when `sealed` was not sealed with this context and secret, or was altered.
std::optional<std::string> unseal(std::string_view context, std::string_view secret, std::string_view sealed);
//! Constant-time comparison of two strings of possibly different length.
bool equal_constant_time(std::string_view a, std::string_view b);
//! Standard base64 with padding (Solana's wire encoding); decode answers nullopt for anything else.
std::string base64_encode(const std::vector<std::uint8_t>& bytes);
std::optional<std::vector<std::uint8_t>> base64_decode(std::string_view text);

}  // namespace gpunex::util
