// The Solana payout transaction (core/solana, util/ed25519; issue #18): compact-u16, associated token
// accounts against the reference's vectors, the legacy message's account order and header, each
// instruction's bytes, and a signature that verifies over exactly the message.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/payout_destination.hpp"
#include "core/solana.hpp"
#include "util/ed25519.hpp"

using namespace gpunex;  // NOLINT: test file
namespace solana = core::solana;

namespace {

solana::Key key(const char* base58) {
  auto k = solana::key_from_base58(base58);
  EXPECT_TRUE(k) << base58;
  return k ? *k : solana::Key{};
}

const solana::Key kUsdc = key("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");

TEST(Solana, ShortvecMatchesTheReferenceVectors) {
  EXPECT_EQ(solana::shortvec(0), solana::Bytes({0x00}));
  EXPECT_EQ(solana::shortvec(0x7f), solana::Bytes({0x7f}));
  EXPECT_EQ(solana::shortvec(0x80), solana::Bytes({0x80, 0x01}));
  EXPECT_EQ(solana::shortvec(0x3fff), solana::Bytes({0xff, 0x7f}));
  EXPECT_EQ(solana::shortvec(0x4000), solana::Bytes({0x80, 0x80, 0x01}));
}

TEST(Solana, AssociatedTokenAccountsMatchTheReferenceVectors) {
  const std::vector<std::tuple<const char*, const char*, int>> vectors = {
      {"GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE", "DeqZejBFrRwWraY4g4besYmibTY1QcV1Fcg6VfoEvn4T", 255},
      {"9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", "FGETo8T8wMcN2wCjav8VK6eh3dLk63evNDPxzLSJra8B", 254},
      {"8meoEbDNDAogUcAm88F5coEASwyLbqcAMr47WwhpukUx", "GLX7bTkwHg52vsqhZqg5h9C78Vg6G63tCqtD8JHCNmTo", 253},
  };
  for (const auto& [wallet, ata, bump] : vectors) {
    const auto w = key(wallet);
    EXPECT_EQ(solana::to_base58(solana::associated_token_address(w, kUsdc, util::sha256_parts)), ata) << wallet;
    const auto found = solana::find_program_address(
        {solana::Bytes(w.begin(), w.end()),
         solana::Bytes(solana::kTokenProgram.begin(), solana::kTokenProgram.end()),
         solana::Bytes(kUsdc.begin(), kUsdc.end())},
        solana::kAssociatedTokenProgram, util::sha256_parts);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->second, bump) << wallet;
    // A token account is off the curve: no one can sign for it, so it can never be a payout wallet.
    EXPECT_FALSE(core::payout::parse_solana_wallet(ata));
  }
}

TEST(Solana, TokenAmountsFollowTheMintsDecimals) {
  EXPECT_EQ(*solana::token_amount(4'800'000, 6), 4'800'000U);
  EXPECT_EQ(*solana::token_amount(4'800'000, 9), 4'800'000'000U);
  EXPECT_EQ(*solana::token_amount(4'800'000, 2), 480U);
  EXPECT_FALSE(solana::token_amount(4'800'001, 2));  // not exact with two decimals
  EXPECT_FALSE(solana::token_amount(0, 6));
  EXPECT_FALSE(solana::token_amount(9'000'000'000'000'000'000, 18));  // does not fit a u64
}

TEST(Solana, APayoutMessageHasItsAccountsInOrderAndEachInstructionsBytes) {
  const auto hot = util::ed25519_from_seed({1, 2, 3});
  const auto hot_key = util::ed25519_public(hot);
  solana::PayoutTransfer t;
  t.hot_wallet = hot_key;
  t.mint = kUsdc;
  t.decimals = 6;
  t.destination_wallet = key("GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE");
  t.amount = 4'800'000;
  t.memo = "pay_0123456789abcdef0123";
  t.blockhash.fill(7);
  t.compute_unit_price = 1000;
  auto m = solana::payout_message(t, util::sha256_parts);
  ASSERT_TRUE(m) << m.error().message;
  // The hot wallet signs; two token accounts are written; seven accounts are read only.
  EXPECT_EQ(m->required_signatures, 1);
  EXPECT_EQ(m->readonly_signed, 0);
  EXPECT_EQ(m->readonly_unsigned, 7);
  ASSERT_EQ(m->keys.size(), 10U);
  EXPECT_EQ(m->keys[0], hot_key);
  const auto dest_ata = key("DeqZejBFrRwWraY4g4besYmibTY1QcV1Fcg6VfoEvn4T");
  const auto src_ata = solana::associated_token_address(hot_key, kUsdc, util::sha256_parts);
  EXPECT_EQ(m->keys[1], dest_ata);  // writable non-signers, first seen first
  EXPECT_EQ(m->keys[2], src_ata);
  const auto& b = m->bytes;
  EXPECT_EQ(solana::Bytes(b.begin(), b.begin() + 4), solana::Bytes({1, 0, 7, 10}));
  // The blockhash follows the ten keys; then five instructions.
  const std::size_t after_keys = 4 + 10 * 32;
  EXPECT_EQ(solana::Bytes(b.begin() + after_keys, b.begin() + after_keys + 32), solana::Bytes(32, 7));
  EXPECT_EQ(b[after_keys + 32], 5);
  // TransferChecked's data: 0x0C, the amount little-endian, the decimals.
  const solana::Bytes transfer = {0x0C, 0x00, 0x3E, 0x49, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06};
  EXPECT_NE(std::search(b.begin(), b.end(), transfer.begin(), transfer.end()), b.end());
  // The memo is the payout id, in the clear, at the end.
  const std::string tail(b.end() - static_cast<long>(t.memo.size()), b.end());
  EXPECT_EQ(tail, t.memo);

  const auto sig = util::ed25519_sign(hot, m->bytes);
  EXPECT_TRUE(util::ed25519_verify(hot_key, sig, m->bytes));
  auto altered = m->bytes;
  altered.back() ^= 1;
  EXPECT_FALSE(util::ed25519_verify(hot_key, sig, altered));
  const auto wire = solana::transaction_bytes(sig, m->bytes);
  EXPECT_EQ(wire.size(), 1 + 64 + m->bytes.size());
  EXPECT_LE(wire.size(), solana::kMaxTransactionBytes);
  EXPECT_EQ(util::ed25519_sign(hot, m->bytes), sig) << "deterministic";

  t.memo = "";
  EXPECT_EQ(solana::payout_message(t, util::sha256_parts).error().field, "memo");
}

}  // namespace
