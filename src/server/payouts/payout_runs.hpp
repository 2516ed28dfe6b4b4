#pragma once
// Payout runs (DESIGN §3.11, issue #18): on each payout day the payouts worker creates one payout per
// provider whose schedule and method fall due that day and whose earnings settled before the day
// began reach the minimum. Creating a payout is one store transaction: the payout row (unique per
// provider and payout day, so a retried or concurrent run pays nobody twice) and the ledger
// transaction that moves the amount from the provider's earnings to "payouts in flight". Paid, it
// moves on to money_out; failed for good or returned by the bank, back to the provider's earnings,
// and the provider is told why.
//
// SEPA payouts wait for the operator: they enter the run's USDC→EUR rate, which makes the batch's
// pain.001.001.03 file (core/sepa), download it for the bank, mark the batch sent, and later mark each
// payout paid or returned. Solana payouts are held, with the reason shown to the operator, while no
// chain client is configured: their earnings stay with the provider until one is.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/payout_calendar.hpp"
#include "core/result.hpp"
#include "server/platform/paging.hpp"
#include "store/store.hpp"

namespace gpunex::server::payouts {

struct RunSettings {
  core::payout::Minimums minimums;
  bool solana_configured = false;  // a chain client and hot wallet to pay USDC on Solana from
  std::string base_url;            // links in what the admins are told (a run held)
};

//! Tells every admin that a payout run is held, and why, linking to the dashboard's Payouts page: said
//! once, when the run becomes held.
void tell_admins_run_held(store::Tx& tx, const std::string& payout_day, const std::string& reason,
                          const std::string& base_url, std::int64_t now_ms);

//! What one round did (for logs and tests).
struct RoundResult {
  int created = 0;       // payouts created
  int held = 0;          // payouts a held run did not create
  int below_minimum = 0;
};

//! Creates the payouts due on any of the last seven days up to `now_ms` (a worker that was down on
//! Monday still pays Monday's on Tuesday), each provider in its own store transaction.
RoundResult run_due_payouts(store::Store& store, const RunSettings& settings, std::int64_t now_ms);

//! What a run would pay a provider on `payout_day`: the earnings settled before the day began, at
//! most the earnings balance now (what later payouts or corrections took is not paid twice).
core::MicroUsdc payable(store::Tx& tx, const std::string& provider_id, std::int64_t cutoff_ms);
//! Whether a run has made the provider's payout of `day` (whatever became of it since).
bool has_payout(store::Tx& tx, const std::string& provider_id, date::sys_days day);

//! The provider's payouts, newest first (GET /v1/provider/payouts).
nlohmann::json provider_payouts(store::Tx& tx, const std::string& provider_id);

//! A page of the runs, newest first, each with its payouts and SEPA batches (the admin's page):
//! {items, next_cursor}. Only the page's runs are read whole; a cursor naming no run is a 400 naming it.
core::Result<nlohmann::json> runs_page(store::Tx& tx, const PageParams& page);

//! The platform's bank account SEPA payouts leave from (operator settings).
struct Debtor {
  std::string name;
  std::string iban;
  std::string bic;  // optional
};

//! Makes the SEPA batch of a run: every payout of the run still waiting for one, at `eur_per_usdc_micro`,
//! executed on the payout day (today if that has passed). The file is validated by core::sepa before
//! anything is written; a payout below one cent at the rate is returned to its provider. Errors: not_found (run), conflict (nothing waits for a batch; not a SEPA run),
//! invalid_field (no platform bank account configured).
core::Result<nlohmann::json> create_sepa_batch(store::Tx& tx, const std::string& run_id, std::int64_t eur_per_usdc_micro,
                                               const Debtor& debtor, const std::string& actor, const std::string& link,
                                               std::int64_t now_ms);

//! The batch's pain.001 file as written; nullopt when there is no such batch.
std::optional<std::string> sepa_batch_file(store::Tx& tx, const std::string& batch_id);

//! The operator handed the file to the bank: its payouts are sent.
core::Result<nlohmann::json> mark_batch_sent(store::Tx& tx, const std::string& batch_id, std::int64_t now_ms);

//! The operator's word on one sent payout: paid (in flight → money_out), or returned with a reason
//! (in flight → the provider's earnings; the provider is mailed and notified). A repeat of the same
//! outcome answers the payout as it is; the other outcome after one is a conflict.
enum class Outcome { paid, returned };
core::Result<nlohmann::json> settle_payout(store::Tx& tx, const std::string& payout_id, Outcome outcome,
                                           const std::string& reason, const std::string& link, std::int64_t now_ms);

//! For the chain sender: the payout confirmed paid (in flight → money_out), or failed for good (back to
//! the provider, who is mailed and notified with `reason`). Each is posted once whatever the retries.
core::Status confirm_paid(store::Tx& tx, const std::string& payout_id, const std::string& confirmation,
                          std::int64_t now_ms);
core::Status fail_for_good(store::Tx& tx, const std::string& payout_id, const std::string& reason,
                           const std::string& link, std::int64_t now_ms);

}  // namespace gpunex::server::payouts
