#pragma once
// USDC payouts on Solana (DESIGN §3.11, issue #18), pure: the legacy transaction a payout sends and
// the addresses it needs. No I/O: the chain client (JSON-RPC) and the key that signs live elsewhere;
// this builds the message bytes they sign and send. `../shared/reference/payouts.md` gives the wire
// format, the programs and the vectors the tests check.
//
// A payout's message: compute budget (unit limit and price), Associated Token CreateIdempotent for
// the provider's USDC account (a no-op when it exists), Token TransferChecked from the hot wallet's
// USDC account, and a Memo with the payout id; the hot wallet pays the fee and signs.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/money.hpp"
#include "core/payout_destination.hpp"
#include "core/result.hpp"

namespace gpunex::core::solana {

using Key = payout::PublicKey;
using Hash = std::array<std::uint8_t, 32>;
using Bytes = std::vector<std::uint8_t>;

//! A key from base58 (program ids, the mint); nullopt unless it is 32 bytes.
std::optional<Key> key_from_base58(std::string_view text);
std::string to_base58(const Key& key);

extern const Key kSystemProgram;
extern const Key kTokenProgram;
extern const Key kAssociatedTokenProgram;
extern const Key kComputeBudgetProgram;
extern const Key kMemoProgram;

//! compact-u16: 7 bits a byte, least significant first, 0x80 = more follows.
Bytes shortvec(std::uint16_t n);

//! SHA-256 of the concatenated parts (the program-derived address hash).
using Sha256 = Hash (*)(const std::vector<std::string_view>& parts);

//! The program-derived address of `seeds` under `program`: SHA-256(seeds ‖ bump ‖ program ‖
//! "ProgramDerivedAddress") for bump 255 down to 0, the first that is off the Ed25519 curve.
std::optional<std::pair<Key, std::uint8_t>> find_program_address(const std::vector<Bytes>& seeds, const Key& program,
                                                                 Sha256 sha256);
//! The associated token account of `wallet` for `mint` (seeds: wallet, Token program, mint).
Key associated_token_address(const Key& wallet, const Key& mint, Sha256 sha256);

struct AccountMeta {
  Key key;
  bool signer = false;
  bool writable = false;
};
struct Instruction {
  Key program;
  std::vector<AccountMeta> accounts;
  Bytes data;
};

Instruction set_compute_unit_limit(std::uint32_t units);
Instruction set_compute_unit_price(std::uint64_t micro_lamports);
Instruction create_associated_token_account_idempotent(const Key& payer, const Key& account, const Key& wallet,
                                                        const Key& mint);
Instruction transfer_checked(const Key& source, const Key& mint, const Key& destination, const Key& owner,
                             std::uint64_t amount, std::uint8_t decimals);
Instruction memo(std::string_view text);

//! The largest serialized transaction Solana accepts.
inline constexpr std::size_t kMaxTransactionBytes = 1232;

//! A legacy message: the fee payer first, then the accounts grouped (writable signers, read-only
//! signers, writable non-signers, read-only non-signers; first seen first within a group), each key
//! once with the strongest role any instruction gives it.
struct Message {
  std::uint8_t required_signatures = 0;
  std::uint8_t readonly_signed = 0;
  std::uint8_t readonly_unsigned = 0;
  std::vector<Key> keys;
  Hash blockhash{};
  Bytes bytes;  // serialized: what is signed
};
Message compile_message(const Key& fee_payer, const std::vector<Instruction>& instructions, const Hash& blockhash);

//! The wire transaction: shortvec(1) · signature · message.
Bytes transaction_bytes(const std::array<std::uint8_t, 64>& signature, const Bytes& message);

//! micro-USDC in the mint's base units (USDC has 6 decimals: the same number); an error when the
//! amount does not fit or cannot be written exactly with `decimals`.
Result<std::uint64_t> token_amount(MicroUsdc amount, std::uint8_t decimals);

struct PayoutTransfer {
  Key hot_wallet;  // pays the fee, owns the source token account, signs
  Key mint;
  std::uint8_t decimals = 6;
  Key destination_wallet;
  std::uint64_t amount = 0;  // base units
  std::string memo;          // the payout id
  Hash blockhash{};
  std::uint32_t compute_unit_limit = 60'000;
  std::uint64_t compute_unit_price = 0;  // micro-lamports per unit (priority fee)
};
//! The payout's message (see the header comment); an error when it would exceed kMaxTransactionBytes
//! or the memo is empty or longer than 64 bytes.
Result<Message> payout_message(const PayoutTransfer& transfer, Sha256 sha256);

}  // namespace gpunex::core::solana
