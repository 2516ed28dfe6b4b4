#include "core/payout_destination.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace gpunex::core::payout {

namespace {

constexpr std::string_view kAlphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// ---- the field of integers mod p = 2^255 - 19, four 64-bit limbs, least significant first ----

using u64 = std::uint64_t;
using u128 = unsigned __int128;
using Fe = std::array<u64, 4>;

constexpr Fe kP = {0xffffffffffffffedULL, 0xffffffffffffffffULL, 0xffffffffffffffffULL, 0x7fffffffffffffffULL};
// d = -121665 / 121666 mod p, Ed25519's curve constant.
constexpr Fe kD = {0x75eb4dca135978a3ULL, 0x00700a4d4141d8abULL, 0x8cc740797779e898ULL, 0x52036cee2b6ffe73ULL};
// (p - 1) / 2: x^that is 1 for a non-zero square, p - 1 for a non-square (Euler's criterion).
constexpr Fe kHalf = {0xfffffffffffffff6ULL, 0xffffffffffffffffULL, 0xffffffffffffffffULL, 0x3fffffffffffffffULL};
constexpr Fe kOne = {1, 0, 0, 0};

bool geq(const Fe& a, const Fe& b) {
  for (int i = 3; i >= 0; --i) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return true;
}

Fe sub_raw(const Fe& a, const Fe& b) {  // a - b, a >= b
  Fe r{};
  u64 borrow = 0;
  for (int i = 0; i < 4; ++i) {
    const u128 d = static_cast<u128>(a[i]) - b[i] - borrow;
    r[i] = static_cast<u64>(d);
    borrow = (d >> 64) != 0 ? 1 : 0;
  }
  return r;
}

Fe reduce(Fe a) {  // a < 2^256 = 2p + 38: at most two subtractions
  while (geq(a, kP)) a = sub_raw(a, kP);
  return a;
}

//! A 5-limb value (the fifth below 2^64) reduced: 2^256 ≡ 38 (mod p).
Fe fold(std::array<u64, 5> x) {
  while (x[4] != 0) {
    const u128 add = static_cast<u128>(x[4]) * 38;
    x[4] = 0;
    u128 carry = add;
    for (int i = 0; i < 4; ++i) {
      carry += x[i];
      x[i] = static_cast<u64>(carry);
      carry >>= 64;
    }
    x[4] = static_cast<u64>(carry);
  }
  return reduce({x[0], x[1], x[2], x[3]});
}

Fe add(const Fe& a, const Fe& b) {
  std::array<u64, 5> r{};
  u128 carry = 0;
  for (int i = 0; i < 4; ++i) {
    carry += static_cast<u128>(a[i]) + b[i];
    r[i] = static_cast<u64>(carry);
    carry >>= 64;
  }
  r[4] = static_cast<u64>(carry);
  return fold(r);
}

Fe sub(const Fe& a, const Fe& b) {  // both reduced
  return geq(a, b) ? sub_raw(a, b) : sub_raw(add(a, kP), b);
}

Fe mul(const Fe& a, const Fe& b) {
  std::array<u64, 8> t{};
  for (int i = 0; i < 4; ++i) {
    u128 carry = 0;
    for (int j = 0; j < 4; ++j) {
      carry += static_cast<u128>(a[i]) * b[j] + t[i + j];
      t[i + j] = static_cast<u64>(carry);
      carry >>= 64;
    }
    t[i + 4] = static_cast<u64>(carry);
  }
  // low + 38 · high: at most 5 limbs.
  std::array<u64, 5> r{};
  u128 carry = 0;
  for (int i = 0; i < 4; ++i) {
    carry += static_cast<u128>(t[i + 4]) * 38 + t[i];
    r[i] = static_cast<u64>(carry);
    carry >>= 64;
  }
  r[4] = static_cast<u64>(carry);
  return fold(r);
}

Fe pow(const Fe& base, const Fe& exponent) {
  Fe result = kOne;
  for (int i = 255; i >= 0; --i) {
    result = mul(result, result);
    if ((exponent[static_cast<std::size_t>(i / 64)] >> (i % 64)) & 1) result = mul(result, base);
  }
  return result;
}

bool is_zero(const Fe& a) {
  return a == Fe{0, 0, 0, 0};
}

// ---- IBAN ----

// IBAN lengths of the SEPA scheme's countries (ISO 13616 registry).
const std::map<std::string, std::size_t, std::less<>>& sepa_lengths() {
  static const std::map<std::string, std::size_t, std::less<>> m = {
      {"AD", 24}, {"AT", 20}, {"BE", 16}, {"BG", 22}, {"CH", 21}, {"CY", 28}, {"CZ", 24}, {"DE", 22},
      {"DK", 18}, {"EE", 20}, {"ES", 24}, {"FI", 18}, {"FR", 27}, {"GB", 22}, {"GI", 23}, {"GR", 27},
      {"HR", 21}, {"HU", 28}, {"IE", 22}, {"IS", 26}, {"IT", 27}, {"LI", 21}, {"LT", 20}, {"LU", 20},
      {"LV", 21}, {"MC", 27}, {"MT", 31}, {"NL", 18}, {"NO", 15}, {"PL", 28}, {"PT", 25}, {"RO", 24},
      {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27}, {"VA", 22}};
  return m;
}

}  // namespace

std::string base58_encode(const std::vector<std::uint8_t>& bytes) {
  std::size_t zeros = 0;
  while (zeros < bytes.size() && bytes[zeros] == 0) ++zeros;
  std::vector<std::uint8_t> digits;  // base 58, least significant first
  for (std::size_t i = zeros; i < bytes.size(); ++i) {
    unsigned carry = bytes[i];
    for (auto& d : digits) {
      carry += static_cast<unsigned>(d) << 8;
      d = static_cast<std::uint8_t>(carry % 58);
      carry /= 58;
    }
    while (carry > 0) {
      digits.push_back(static_cast<std::uint8_t>(carry % 58));
      carry /= 58;
    }
  }
  std::string out(zeros, '1');
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) out += kAlphabet[*it];
  return out;
}

std::optional<std::vector<std::uint8_t>> base58_decode(std::string_view text) {
  std::size_t ones = 0;
  while (ones < text.size() && text[ones] == '1') ++ones;
  std::vector<std::uint8_t> bytes;  // base 256, least significant first
  for (std::size_t i = ones; i < text.size(); ++i) {
    const auto pos = kAlphabet.find(text[i]);
    if (pos == std::string_view::npos) return std::nullopt;
    unsigned carry = static_cast<unsigned>(pos);
    for (auto& b : bytes) {
      carry += static_cast<unsigned>(b) * 58;
      b = static_cast<std::uint8_t>(carry & 0xff);
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push_back(static_cast<std::uint8_t>(carry & 0xff));
      carry >>= 8;
    }
  }
  std::vector<std::uint8_t> out(ones, 0);
  out.insert(out.end(), bytes.rbegin(), bytes.rend());
  return out;
}

bool on_ed25519_curve(const PublicKey& key) {
  Fe y{};
  for (int i = 0; i < 32; ++i) y[static_cast<std::size_t>(i / 8)] |= static_cast<u64>(key[static_cast<std::size_t>(i)]) << (8 * (i % 8));
  y[3] &= 0x7fffffffffffffffULL;  // the top bit is x's sign
  y = reduce(y);
  const Fe yy = mul(y, y);
  const Fe u = sub(yy, kOne);
  const Fe v = add(mul(kD, yy), kOne);
  // u/v is a square iff u·v is (v² is one): zero, or Euler's criterion gives 1.
  const Fe uv = mul(u, v);
  return is_zero(uv) || pow(uv, kHalf) == kOne;
}

namespace {

//! Addresses that are on the curve yet are nobody's wallet: programs and mints. USDC sent to one is lost.
constexpr std::string_view kNotWallets[] = {
    "11111111111111111111111111111111",              // the System program
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",   // the Token program
    "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",   // Token-2022
    "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",  // the Associated Token Account program
    "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",  // the USDC mint (mainnet)
    "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",  // the USDC mint (devnet)
    "So11111111111111111111111111111111111111112",   // wrapped SOL's mint
    "ComputeBudget111111111111111111111111111111",   // the Compute Budget program
    "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",   // the Memo program
};

}  // namespace

Result<PublicKey> parse_solana_wallet(std::string_view text, const std::string& field) {
  for (const auto known : kNotWallets) {
    if (text == known) {
      return Error::make(ErrorCode::invalid_field,
                         "this is the address of a Solana program or mint, not a wallet: USDC sent there is lost. "
                         "Give your wallet's own address",
                         field)
          .with_code("not_a_wallet");
    }
  }
  auto bytes = base58_decode(text);
  if (!bytes) {
    return Error::make(ErrorCode::invalid_field,
                       "a Solana address is base58: letters and digits without 0, O, I and l", field)
        .with_code("invalid_wallet_address");
  }
  if (bytes->size() != 32) {
    return Error::make(ErrorCode::invalid_field,
                       "a Solana address is 32 bytes (32 to 44 base58 characters); this one is " +
                           std::to_string(bytes->size()) + " bytes",
                       field)
        .with_code("invalid_wallet_address");
  }
  PublicKey key{};
  std::copy(bytes->begin(), bytes->end(), key.begin());
  if (!on_ed25519_curve(key)) {
    return Error::make(ErrorCode::invalid_field,
                       "this address is a program-derived address (off the Ed25519 curve), such as a token "
                       "account: no one can sign for it. Give your wallet's own address",
                       field)
        .with_code("off_curve_address");
  }
  return key;
}

std::string normalize_iban(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ' ') continue;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

bool sepa_country(std::string_view country) {
  return sepa_lengths().find(country) != sepa_lengths().end();
}

bool valid_iban(std::string_view iban) {
  if (iban.size() < 15 || iban.size() > 34) return false;
  for (char c : iban) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c))) return false;
  }
  const auto len = sepa_lengths().find(iban.substr(0, 2));
  if (len == sepa_lengths().end() || len->second != iban.size()) return false;
  if (!std::isdigit(static_cast<unsigned char>(iban[2])) || !std::isdigit(static_cast<unsigned char>(iban[3]))) {
    return false;
  }
  // The first four characters moved to the end, letters as 10..35, the number mod 97, digit by digit.
  const std::string moved = std::string(iban.substr(4)) + std::string(iban.substr(0, 4));
  unsigned rest = 0;
  for (char c : moved) {
    const unsigned v = std::isdigit(static_cast<unsigned char>(c)) ? static_cast<unsigned>(c - '0')
                                                                   : static_cast<unsigned>(c - 'A' + 10);
    rest = v >= 10 ? (rest * 100 + v) % 97 : (rest * 10 + v) % 97;
  }
  return rest == 1;
}

bool valid_bic(std::string_view bic) {
  if (bic.size() != 8 && bic.size() != 11) return false;
  for (std::size_t i = 0; i < 6; ++i) {
    if (!std::isupper(static_cast<unsigned char>(bic[i]))) return false;
  }
  const char c6 = bic[6], c7 = bic[7];
  if (!(std::isupper(static_cast<unsigned char>(c6)) || (c6 >= '2' && c6 <= '9'))) return false;
  if (!((std::isupper(static_cast<unsigned char>(c7)) && c7 != 'O') || std::isdigit(static_cast<unsigned char>(c7)))) {
    return false;
  }
  for (std::size_t i = 8; i < bic.size(); ++i) {
    if (!std::isupper(static_cast<unsigned char>(bic[i])) && !std::isdigit(static_cast<unsigned char>(bic[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace gpunex::core::payout
