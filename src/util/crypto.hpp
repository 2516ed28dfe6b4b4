#pragma once
// Randomness and hashing (libsodium, OpenSSL). Call init_crypto() once at start-up.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpunex::util {

//! Initialises libsodium; throws if it cannot.
void init_crypto();
//! n random bytes, encoded base64url without padding.
std::string random_token(std::size_t n_bytes);
//! A new opaque id such as "usr_3f9a..." (prefix + 20 random hex chars).
std::string new_id(std::string_view prefix);
//! Lower-case hex SHA-256 of the input.
std::string sha256_hex(std::string_view data);
//! argon2id hash in libsodium's string format (interactive limits).
std::string hash_password(std::string_view password);
//! Checks a password against hash_password()'s output, in constant time.
bool verify_password(std::string_view password, const std::string& hash);
//! Constant-time comparison of two strings of possibly different length.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace gpunex::util
