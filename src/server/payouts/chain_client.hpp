#pragma once
// The Solana JSON-RPC methods the payout engine calls (../shared/reference/payouts.md), behind an
// interface so the engine's exactly-once logic does not care where the chain is. The implementation
// speaks JSON-RPC over HTTP(S) with libcurl (util::HttpClient); tests run it against litesvm behind
// a JSON-RPC server on loopback (tests/js/lib/solana_chain.mjs).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/solana.hpp"

namespace gpunex::server::payouts {

struct LatestBlockhash {
  core::solana::Hash blockhash{};
  std::uint64_t last_valid_block_height = 0;
};

struct SignatureStatus {
  std::optional<std::string> err;  // set: the transaction failed, for good
  std::string confirmation;        // processed, confirmed or finalized
};

class ChainClient {
 public:
  virtual ~ChainClient() = default;
  virtual core::Result<LatestBlockhash> latest_blockhash() = 0;
  //! Sends signed bytes; the answer is the signature, or the node's refusal. Sending the same bytes
  //! again is harmless: the chain runs a signature once.
  virtual core::Result<std::string> send_transaction(const core::solana::Bytes& wire) = 0;
  //! With history search: nullopt for a signature the chain does not know.
  virtual core::Result<std::vector<std::optional<SignatureStatus>>> signature_statuses(
      const std::vector<std::string>& signatures) = 0;
  virtual core::Result<std::uint64_t> block_height() = 0;
  //! A token account's balance in base units (0 when it does not exist).
  virtual core::Result<std::uint64_t> token_balance(const core::solana::Key& account) = 0;
  //! Lamports.
  virtual core::Result<std::uint64_t> sol_balance(const core::solana::Key& account) = 0;
};

//! JSON-RPC at `url` (http:// or https://), each call timing out after `timeout_ms`.
std::unique_ptr<ChainClient> make_json_rpc_client(const std::string& url, int timeout_ms);

}  // namespace gpunex::server::payouts
