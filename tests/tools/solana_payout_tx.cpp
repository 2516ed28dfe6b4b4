// Test tool: prints the signed payout transaction the C++ builder makes (core/solana) as JSON, for
// tests/js/solana/decode.test.mjs to decode with @solana/web3.js 1.x, the independent oracle.
//   solana_payout_tx SEED_HEX MINT DESTINATION AMOUNT_MICRO DECIMALS MEMO BLOCKHASH CU_PRICE
#include <sodium.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "core/solana.hpp"
#include "util/crypto.hpp"
#include "util/ed25519.hpp"

using namespace gpunex;  // NOLINT: test tool

int main(int argc, char** argv) {
  if (argc != 9 || sodium_init() < 0) {
    std::fprintf(stderr, "usage: solana_payout_tx SEED_HEX MINT DESTINATION AMOUNT_MICRO DECIMALS MEMO BLOCKHASH CU_PRICE\n");
    return 2;
  }
  std::array<std::uint8_t, 32> seed{};
  const std::string seed_hex = argv[1];
  if (sodium_hex2bin(seed.data(), seed.size(), seed_hex.data(), seed_hex.size(), nullptr, nullptr, nullptr) != 0) {
    std::fprintf(stderr, "SEED_HEX must be 64 hex digits\n");
    return 2;
  }
  const auto secret = util::ed25519_from_seed(seed);
  const auto mint = core::solana::key_from_base58(argv[2]);
  const auto to = core::solana::key_from_base58(argv[3]);
  const auto blockhash = core::solana::key_from_base58(argv[7]);
  if (!mint || !to || !blockhash) {
    std::fprintf(stderr, "MINT, DESTINATION and BLOCKHASH must be base58 of 32 bytes\n");
    return 2;
  }
  const auto decimals = static_cast<std::uint8_t>(std::stoi(argv[5]));
  const auto amount = core::solana::token_amount(std::stoll(argv[4]), decimals);
  if (!amount) {
    std::fprintf(stderr, "%s\n", amount.error().message.c_str());
    return 2;
  }
  core::solana::PayoutTransfer t;
  t.hot_wallet = util::ed25519_public(secret);
  t.mint = *mint;
  t.decimals = decimals;
  t.destination_wallet = *to;
  t.amount = *amount;
  t.memo = argv[6];
  t.blockhash = *blockhash;
  t.compute_unit_price = std::stoull(argv[8]);
  auto m = core::solana::payout_message(t, util::sha256_parts);
  if (!m) {
    std::fprintf(stderr, "%s\n", m.error().message.c_str());
    return 1;
  }
  const auto sig = util::ed25519_sign(secret, m->bytes);
  const auto wire = core::solana::transaction_bytes(sig, m->bytes);
  const std::string b64 = util::base64_encode(wire);
  const nlohmann::json out{
      {"transaction_base64", b64},
      {"signature", core::payout::base58_encode(std::vector<std::uint8_t>(sig.begin(), sig.end()))},
      {"hot_wallet", core::solana::to_base58(t.hot_wallet)},
      {"source_token_account",
       core::solana::to_base58(core::solana::associated_token_address(t.hot_wallet, t.mint, util::sha256_parts))},
      {"destination_token_account",
       core::solana::to_base58(core::solana::associated_token_address(t.destination_wallet, t.mint, util::sha256_parts))}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
