#include "server/payouts/solana_payouts.hpp"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/money.hpp"
#include "server/payouts/payout_runs.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"

namespace gpunex::server::payouts {

namespace {

using core::Error;
using core::ErrorCode;
namespace solana = core::solana;

struct Signed {
  std::string signature;
  solana::Bytes wire;  // what is sent; stored as base64
  std::uint64_t last_valid_block_height = 0;
};

//! Builds and signs the payout's transaction on a fresh blockhash.
core::Result<Signed> sign_payout(ChainClient& chain, const SolanaSettings& s, const std::string& payout_id,
                                 const std::string& wallet, core::MicroUsdc amount) {
  auto to = solana::key_from_base58(wallet);
  if (!to) return Error::make(ErrorCode::invalid_field, "the payout's wallet is not a Solana address", "wallet_address");
  auto units = solana::token_amount(amount, s.decimals);
  if (!units) return std::move(units).error();
  auto hash = chain.latest_blockhash();
  if (!hash) return std::move(hash).error();
  solana::PayoutTransfer t;
  t.hot_wallet = util::ed25519_public(s.hot_wallet);
  t.mint = s.mint;
  t.decimals = s.decimals;
  t.destination_wallet = *to;
  t.amount = *units;
  t.memo = payout_id;
  t.blockhash = hash->blockhash;
  t.compute_unit_limit = s.compute_unit_limit;
  t.compute_unit_price = s.compute_unit_price;
  auto m = solana::payout_message(t, util::sha256_parts);
  if (!m) return std::move(m).error();
  const auto sig = util::ed25519_sign(s.hot_wallet, m->bytes);
  return Signed{core::payout::base58_encode(solana::Bytes(sig.begin(), sig.end())),
                solana::transaction_bytes(sig, m->bytes), hash->last_valid_block_height};
}

struct Pending {
  std::string id, run_id, wallet, status;
  core::MicroUsdc amount = 0;
  std::optional<std::string> signature, raw;
  std::uint64_t last_valid = 0;
};

std::vector<Pending> unfinished(store::Store& store) {
  return store.transact(
      [](store::Tx& tx) {
        std::vector<Pending> out;
        for (const auto& r : tx.query("SELECT id, run_id, destination, status, amount, signature, raw_tx, "
                                      "last_valid_block_height FROM payouts WHERE method = 'solana_usdc' AND "
                                      "status IN ('pending', 'sending') ORDER BY created_at, id")) {
          Pending p;
          p.id = r.str(0);
          p.run_id = r.str(1);
          p.wallet = nlohmann::json::parse(r.str(2), nullptr, false).value("wallet_address", "");
          p.status = r.str(3);
          p.amount = r.i64(4);
          p.signature = r.opt_str(5);
          p.raw = r.opt_str(6);
          p.last_valid = static_cast<std::uint64_t>(r.opt_i64(7).value_or(0));
          out.push_back(std::move(p));
        }
        return out;
      },
      store::TxMode::read);
}

//! Holds the runs whose not-yet-signed payouts exceed the hot wallet's USDC (and tells the operators
//! once), and frees the held ones that now fit. Answers the runs that may sign.
core::Result<std::map<std::string, bool>> check_funds(store::Store& store, ChainClient& chain, const SolanaSettings& s,
                                                      const std::vector<Pending>& todo, const std::string& base_url,
                                                      std::int64_t now_ms, SendRound& round) {
  std::map<std::string, core::MicroUsdc> need;
  for (const auto& p : todo) {
    if (!p.signature) need[p.run_id] += p.amount;
  }
  std::map<std::string, bool> may_sign;
  if (need.empty()) return may_sign;
  const auto source = solana::associated_token_address(util::ed25519_public(s.hot_wallet), s.mint, util::sha256_parts);
  auto balance = chain.token_balance(source);
  if (!balance) return std::move(balance).error();
  std::uint64_t left = *balance;
  for (const auto& entry : need) {
    const std::string run_id = entry.first;  // not a structured binding: clang 14 cannot capture one
    auto units = solana::token_amount(entry.second, s.decimals);
    const bool fits = units && *units <= left;
    if (fits) left -= *units;
    may_sign[run_id] = fits;
    const std::string reason = fits ? "" : "the hot wallet holds " + std::to_string(*balance) +
                                               " base units of USDC; this run needs " +
                                               (units ? std::to_string(*units) : std::string("more")) +
                                               ": top it up and the run goes on";
    store.transact([&](store::Tx& tx) {
      auto run = tx.query_one("SELECT status, payout_day FROM payout_runs WHERE id = ?", {run_id});
      if (!run) return;
      const bool held = run->str(0) == "held";
      if (fits && held) {
        tx.exec("UPDATE payout_runs SET status = 'open', held_reason = '', updated_at = ? WHERE id = ?",
                {now_ms, run_id});
      } else if (!fits && !held) {
        tx.exec("UPDATE payout_runs SET status = 'held', held_reason = ?, updated_at = ? WHERE id = ?",
                {reason, now_ms, run_id});
        tell_admins_run_held(tx, run->str(1), reason, base_url, now_ms);
      }
    });
    if (!fits) ++round.held_runs;
  }
  return may_sign;
}

//! Stores a newly signed transaction, guarded by the signature it replaces (none for the first), so
//! two replicas never both sign for one payout. False when someone else moved first.
bool store_signed(store::Store& store, const Pending& p, const Signed& sgn, std::int64_t now_ms) {
  return store.transact([&](store::Tx& tx) {
    const std::string guard = p.signature ? "signature = ?" : "signature IS NULL";
    store::Params params{sgn.signature, util::base64_encode(sgn.wire),
                         static_cast<std::int64_t>(sgn.last_valid_block_height), now_ms, p.id};
    if (p.signature) params.push_back(*p.signature);
    auto changed = tx.query("UPDATE payouts SET status = 'sending', signature = ?, raw_tx = ?, "
                            "last_valid_block_height = ?, signed_count = signed_count + 1, updated_at = ? "
                            "WHERE id = ? AND status IN ('pending', 'sending') AND " +
                                guard + " RETURNING id",
                            params);
    return !changed.empty();
  });
}

}  // namespace

core::Result<util::Ed25519Secret> load_keypair_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error::make(ErrorCode::invalid_field, "the Solana keypair file " + path + " cannot be read",
                       "solana_keypair_file");
  }
  if ((st.st_mode & 077) != 0) {
    return Error::make(ErrorCode::invalid_field,
                       "the Solana keypair file " + path + " may be read by others (mode " +
                           std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                           std::to_string(st.st_mode & 7) + "): chmod 600 it",
                       "solana_keypair_file");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  util::Ed25519Secret secret{};
  if (!j.is_array() || j.size() != 64) {
    return Error::make(ErrorCode::invalid_field, "the Solana keypair file must be a JSON array of 64 bytes",
                       "solana_keypair_file");
  }
  for (std::size_t i = 0; i < 64; ++i) {
    if (!j[i].is_number_unsigned() || j[i].get<unsigned>() > 255) {
      return Error::make(ErrorCode::invalid_field, "the Solana keypair file must be a JSON array of 64 bytes",
                         "solana_keypair_file");
    }
    secret[i] = static_cast<std::uint8_t>(j[i].get<unsigned>());
  }
  std::array<std::uint8_t, 32> seed{};
  std::copy(secret.begin(), secret.begin() + 32, seed.begin());
  if (util::ed25519_from_seed(seed) != secret) {
    return Error::make(ErrorCode::invalid_field, "the Solana keypair file's public half does not match its secret",
                       "solana_keypair_file");
  }
  return secret;
}

SendRound send_solana_payouts(store::Store& store, ChainClient& chain, const SolanaSettings& s,
                              const std::string& base_url, std::int64_t now_ms) {
  SendRound round;
  const auto todo = unfinished(store);
  if (todo.empty()) return round;
  const std::string link = base_url + "/#/earnings";  // what a provider is told links to
  auto may_sign = check_funds(store, chain, s, todo, base_url, now_ms, round);
  if (!may_sign) {
    util::log_event("warn", "solana payouts: the node did not answer", {{"error", may_sign.error().message}});
    return round;
  }

  // What the chain knows of the stored signatures, in one call. The block height is asked first: a
  // transaction can land only while the height is at most its lastValidBlockHeight, so one unknown to
  // statuses asked after the height had passed that can never land (asked the other way round, it
  // could land between the two answers and be paid twice).
  std::vector<std::string> signatures;
  for (const auto& p : todo) {
    if (p.signature) signatures.push_back(*p.signature);
  }
  std::map<std::string, std::optional<SignatureStatus>> known;
  std::optional<std::uint64_t> height;
  if (!signatures.empty()) {
    auto h = chain.block_height();
    if (!h) return round;
    height = *h;
    auto statuses = chain.signature_statuses(signatures);
    if (!statuses) return round;
    for (std::size_t i = 0; i < signatures.size(); ++i) known[signatures[i]] = (*statuses)[i];
  }

  // A send's error is judged later, by the statuses.
  auto send = [&](const solana::Bytes& wire) {
    if (chain.send_transaction(wire)) ++round.sent;
  };
  // Stored first, sent only then; nothing when another replica signed it first.
  auto store_then_send = [&](const Pending& p, const Signed& sgn) {
    if (!store_signed(store, p, sgn, now_ms)) return;
    ++round.signed_now;
    send(sgn.wire);
  };

  for (const auto& p : todo) {
    if (!p.signature) {
      if (!(*may_sign)[p.run_id]) continue;
      auto sgn = sign_payout(chain, s, p.id, p.wallet, p.amount);
      if (!sgn) {
        if (sgn.error().code == ErrorCode::unavailable) return round;  // the node: next round
        auto st = store.transact([&](store::Tx& tx) { return fail_for_good(tx, p.id, sgn.error().message, link, now_ms); });
        if (st) ++round.failed;
        continue;
      }
      store_then_send(p, *sgn);
      continue;
    }
    const auto& status = known[*p.signature];
    if (status) {
      if (status->err) {
        auto st = store.transact([&](store::Tx& tx) {
          return fail_for_good(tx, p.id, "the transaction failed on chain: " + *status->err, link, now_ms);
        });
        if (st) ++round.failed;
      } else if (status->confirmation == "confirmed" || status->confirmation == "finalized") {
        auto st = store.transact([&](store::Tx& tx) { return confirm_paid(tx, p.id, status->confirmation, now_ms); });
        if (st) ++round.paid;
      }
      continue;  // processed only: wait for confirmation
    }
    if (height && *height > p.last_valid) {
      // Expired and unknown with history search on: it can never land. Sign anew, store, then send.
      auto sgn = sign_payout(chain, s, p.id, p.wallet, p.amount);
      if (!sgn) return round;
      store_then_send(p, *sgn);
      continue;
    }
    if (p.raw) {
      if (auto wire = util::base64_decode(*p.raw)) send(*wire);  // the same bytes again: harmless
    }
  }
  return round;
}

}  // namespace gpunex::server::payouts
