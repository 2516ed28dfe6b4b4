#pragma once
// Paying USDC on Solana exactly once (issue #18; ../shared/reference/payouts.md, "Sending exactly
// once"). A payout's transaction is built and signed (core/solana, util/ed25519), and its bytes,
// signature and lastValidBlockHeight are stored before the first send. Every round after that asks
// the chain about the stored signature, with history search: confirmed or finalized without an
// error, the payout is paid (in flight → money_out); with an error, it failed for good and the
// amount goes back to the provider, who is told why; unknown while the blockhash is still valid,
// the same bytes are sent again; unknown after the blockhash expired, a new transaction is signed,
// stored, and only then sent. A crash at any step leaves either nothing sent or stored bytes that
// the next round follows up. A run whose payouts would exceed the hot wallet's USDC is held and the
// operators are told, rather than failing payout by payout.

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "core/solana.hpp"
#include "server/payouts/chain_client.hpp"
#include "store/store.hpp"
#include "util/ed25519.hpp"

namespace gpunex::server::payouts {

struct SolanaSettings {
  util::Ed25519Secret hot_wallet{};  // pays the fees and owns the USDC account payouts leave from
  core::solana::Key mint{};
  std::uint8_t decimals = 6;
  std::uint32_t compute_unit_limit = 60'000;
  std::uint64_t compute_unit_price = 0;  // micro-lamports per unit
};

//! A Solana keypair file as solana-keygen writes it (a JSON array of 64 bytes), refused when anyone
//! but its owner may read or write it (mode wider than 0600) or when its halves do not match.
core::Result<util::Ed25519Secret> load_keypair_file(const std::string& path);

struct SendRound {
  int signed_now = 0;
  int sent = 0;
  int paid = 0;
  int failed = 0;
  int held_runs = 0;
};

//! One round over the USDC payouts not yet final. Chain errors end the round early (the next one
//! picks up where it stopped); nothing is ever decided from a failed call. `base_url`: the dashboard's,
//! for the links in what providers (Earnings) and admins (Payouts) are told.
SendRound send_solana_payouts(store::Store& store, ChainClient& chain, const SolanaSettings& settings,
                              const std::string& base_url, std::int64_t now_ms);

}  // namespace gpunex::server::payouts
