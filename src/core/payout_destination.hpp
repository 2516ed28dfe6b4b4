#pragma once
// Where a provider is paid (DESIGN §3.11, issue #18), pure: a Solana wallet (base58, 32 bytes, a
// point on the Ed25519 curve, since only such a key can sign; a program-derived address is off the
// curve) or a SEPA bank account (IBAN checked with mod 97 and its country's length, BIC optional).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpunex::core::payout {

//! Base58 with Bitcoin's alphabet (Solana's addresses and signatures); each leading zero byte is a '1'.
std::string base58_encode(const std::vector<std::uint8_t>& bytes);
//! nullopt when a character is not in the alphabet.
std::optional<std::vector<std::uint8_t>> base58_decode(std::string_view text);

using PublicKey = std::array<std::uint8_t, 32>;
//! Whether 32 bytes decompress to a point of Ed25519 (y = the bytes little-endian, top bit cleared;
//! on the curve iff (y² − 1) / (d·y² + 1) is a square mod 2^255 − 19): plain decompression, as
//! Solana decides whether an address may sign (not libsodium's stricter subgroup check).
bool on_ed25519_curve(const PublicKey& key);

//! A wallet address a payout may go to: base58 of 32 bytes on the curve. The error names `field`
//! and says what is wrong (length, alphabet, a program-derived address that no one can sign for).
Result<PublicKey> parse_solana_wallet(std::string_view text, const std::string& field = "wallet_address");

//! An IBAN without spaces, upper case (the form stored and written to files).
std::string normalize_iban(std::string_view text);
//! Whether `iban` (normalized) has its country's length and passes ISO 13616's mod-97 check.
bool valid_iban(std::string_view iban);
//! The countries of the SEPA scheme, by the IBAN's first two letters.
bool sepa_country(std::string_view country);
//! [A-Z]{6}[A-Z2-9][A-NP-Z0-9]([A-Z0-9]{3})?
bool valid_bic(std::string_view bic);

}  // namespace gpunex::core::payout
