#include "server/payouts/payout_runs.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include <date/date.h>

#include "core/ledger.hpp"
#include "core/money.hpp"
#include "core/payout_destination.hpp"
#include "core/sepa.hpp"
#include "server/billing/ledger_repo.hpp"
#include "server/mail/templates.hpp"
#include "server/onboarding/providers.hpp"
#include "server/payouts/payout_settings.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server::payouts {

namespace {

namespace payout = core::payout;
namespace ledger = core::ledger;
using core::Error;
using core::ErrorCode;

// A payout's life. SEPA: awaiting_batch → batched (in a file) → sent (the file went to the bank) →
// paid or returned; one waiting for a batch may also be returned (a closed account, say).
constexpr const char* kAwaitingBatch = "awaiting_batch";
constexpr const char* kPending = "pending";  // Solana: to be signed and sent by the chain client
constexpr const char* kBatched = "batched";
constexpr const char* kSent = "sent";
constexpr const char* kPaid = "paid";
constexpr const char* kReturned = "returned";
constexpr const char* kFailed = "failed";  // Solana: the transaction failed on chain, for good

constexpr const char* kRunOpen = "open";
constexpr const char* kRunHeld = "held";
constexpr const char* kNoChainClient =
    "no Solana hot wallet is configured: USDC payouts wait, and their earnings stay with the providers";

date::sys_days day_of(std::int64_t ms) {
  return date::floor<date::days>(date::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(ms)));
}

std::string day_text(date::sys_days d) { return date::format("%F", d); }

//! An id in SEPA's characters (no '_'), at most 35: "GPX-" and the id's random part.
std::string sepa_id(const std::string& prefix, const std::string& id) {
  const auto cut = id.find('_');
  return prefix + (cut == std::string::npos ? id : id.substr(cut + 1));
}

std::string ensure_run(store::Tx& tx, const std::string& day, payout::Method method, bool held,
                       const std::string& base_url, std::int64_t now_ms) {
  const bool made =
      !tx.query(
             "INSERT INTO payout_runs (id, payout_day, method, status, held_reason, created_at, "
             "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
             {util::new_id("prun"), day, std::string(payout::to_string(method)),
              std::string(held ? kRunHeld : kRunOpen), std::string(held ? kNoChainClient : ""), now_ms, now_ms})
           .empty();
  if (made && held) tell_admins_run_held(tx, day, kNoChainClient, base_url, now_ms);
  auto row = tx.query_one("SELECT id, status FROM payout_runs WHERE payout_day = ? AND method = ?",
                          {day, std::string(payout::to_string(method))});
  if (!held && row->str(1) == kRunHeld) {
    tx.exec("UPDATE payout_runs SET status = ?, held_reason = '', updated_at = ? WHERE id = ?",
            {std::string(kRunOpen), now_ms, row->str(0)});
  }
  return row->str(0);
}

constexpr const char* kPayoutColumns =
    "p.id, p.run_id, p.provider_id, p.payout_day, p.schedule, p.method, p.destination, p.amount, p.status, "
    "p.failure_reason, p.batch_id, p.end_to_end_id, p.eur_cents, p.created_at, p.updated_at, "
    "b.eur_per_usdc_micro, b.execution_date, b.status, b.message_id, p.signature, p.confirmation";

nlohmann::json payout_json(const store::Row& r) {
  PayoutSettings where;
  if (auto m = payout::parse_method(r.str(5))) where.method = *m;
  where.destination = nlohmann::json::parse(r.str(6), nullptr, false);
  nlohmann::json j{{"id", r.str(0)},
                   {"run_id", r.str(1)},
                   {"payout_day", r.str(3)},
                   {"schedule", r.str(4)},
                   {"method", r.str(5)},
                   {"method_text", method_text(where.method)},
                   {"destination_text", destination_text(where)},
                   {"amount", core::format_usdc(r.i64(7))},
                   {"currency", "USDC"},
                   {"status", r.str(8)},
                   {"failure_reason", r.str(9).empty() ? nlohmann::json(nullptr) : nlohmann::json(r.str(9))},
                   {"created_at", util::rfc3339(r.i64(13))},
                   {"updated_at", util::rfc3339(r.i64(14))},
                   {"sepa", nullptr},
                   {"solana", nullptr}};
  if (!r.is_null(19)) {
    j["solana"] = {{"signature", r.str(19)},
                   {"explorer_url", "https://explorer.solana.com/tx/" + r.str(19)},
                   {"confirmation_status", r.is_null(20) ? nlohmann::json(nullptr) : nlohmann::json(r.str(20))}};
  }
  if (!r.is_null(10)) {
    j["sepa"] = {{"batch_id", r.str(10)},
                 {"message_id", r.str(18)},
                 {"end_to_end_id", r.str(11)},
                 {"eur_amount", core::sepa::cents_text(r.i64(12))},
                 {"eur_per_usdc", core::format_usdc(r.i64(15))},
                 {"execution_date", r.str(16)},
                 {"batch_status", r.str(17)}};
  }
  return j;
}

std::string payouts_query(const std::string& where) {
  return std::string("SELECT ") + kPayoutColumns +
         " FROM payouts p LEFT JOIN sepa_batches b ON b.id = p.batch_id WHERE " + where;
}

nlohmann::json batch_json(const store::Row& r) {
  return {{"id", r.str(0)},
          {"run_id", r.str(1)},
          {"message_id", r.str(2)},
          {"eur_per_usdc", core::format_usdc(r.i64(3))},
          {"transfers", r.i64(4)},
          {"total_eur", core::sepa::cents_text(r.i64(5))},
          {"execution_date", r.str(6)},
          {"status", r.str(7)},
          {"created_at", util::rfc3339(r.i64(8))},
          {"sent_at", r.is_null(9) ? nlohmann::json(nullptr) : nlohmann::json(util::rfc3339(r.i64(9)))}};
}

constexpr const char* kBatchColumns =
    "id, run_id, message_id, eur_per_usdc_micro, transfers, total_cents, execution_date, status, created_at, sent_at";

std::optional<store::Row> find_batch(store::Tx& tx, const std::string& batch_id) {
  return tx.query_one(std::string("SELECT ") + kBatchColumns + " FROM sepa_batches WHERE id = ?", {batch_id});
}

//! Posts a ledger transaction built by core::ledger once (dedupe key), failing loudly if it is refused.
core::Status post_once(store::Tx& tx, core::Result<ledger::Transaction> t, const std::string& dedupe_key) {
  if (!t) return std::move(t).error();
  auto posted = billing::post(tx, *t, dedupe_key);
  if (!posted) return std::move(posted).error();
  return core::ok_status();
}

//! Returns a payout's amount to the provider and tells them why.
core::Status return_payout(store::Tx& tx, const store::Row& p, const std::string& reason, const std::string& link,
                           std::int64_t now_ms, const char* status = kReturned) {
  const std::string id = p.str(0), provider_id = p.str(2);
  const core::MicroUsdc amount = p.i64(7);
  // Returned after it was paid (the bank's return came later): the money comes back from money_out.
  const bool was_paid = p.str(8) == kPaid;
  auto back = was_paid ? ledger::paid_payout_returned(util::new_id("ltx"), provider_id, amount, id, reason, now_ms)
                       : ledger::payout_returned(util::new_id("ltx"), provider_id, amount, id, reason, now_ms);
  if (auto st = post_once(tx, std::move(back), "payout:" + id + ":returned"); !st) {
    return st;
  }
  tx.exec("UPDATE payouts SET status = ?, failure_reason = ?, updated_at = ? WHERE id = ?",
          {std::string(status), reason, now_ms, id});
  if (auto who = provider_contact(tx, provider_id)) {
    auto method = payout::parse_method(p.str(5));
    announce(tx, who->user_id,
             mail::payout_returned(core::format_usdc(amount),
                                   method_text(method ? *method : payout::Method::sepa), reason, link),
             std::nullopt, now_ms);
  }
  return core::ok_status();
}

}  // namespace

core::Status confirm_paid(store::Tx& tx, const std::string& payout_id, const std::string& confirmation,
                          std::int64_t now_ms) {
  auto p = tx.query_one(payouts_query("p.id = ?"), {payout_id});
  if (!p) return Error::make(ErrorCode::not_found, "no payout " + payout_id);
  if (p->str(8) == kPaid) return core::ok_status();
  if (auto st = post_once(tx, ledger::payout_paid(util::new_id("ltx"), p->i64(7), payout_id, now_ms),
                          "payout:" + payout_id + ":paid");
      !st) {
    return st;
  }
  tx.exec("UPDATE payouts SET status = ?, confirmation = ?, updated_at = ? WHERE id = ?",
          {std::string(kPaid), confirmation, now_ms, payout_id});
  return core::ok_status();
}

core::Status fail_for_good(store::Tx& tx, const std::string& payout_id, const std::string& reason,
                           const std::string& link, std::int64_t now_ms) {
  auto p = tx.query_one(payouts_query("p.id = ?"), {payout_id});
  if (!p) return Error::make(ErrorCode::not_found, "no payout " + payout_id);
  if (p->str(8) == kFailed) return core::ok_status();
  return return_payout(tx, *p, reason, link, now_ms, kFailed);
}

core::MicroUsdc payable(store::Tx& tx, const std::string& provider_id, std::int64_t cutoff_ms) {
  const std::string account = ledger::account_name(ledger::Account::provider(provider_id));
  auto before = tx.query_one("SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE account = ? AND created_at < ?",
                             {account, cutoff_ms});
  const core::MicroUsdc settled_before = before ? before->i64(0) : 0;
  return std::min(settled_before, billing::balance(tx, ledger::Account::provider(provider_id)));
}

bool has_payout(store::Tx& tx, const std::string& provider_id, date::sys_days day) {
  return tx.query_one("SELECT 1 FROM payouts WHERE provider_id = ? AND payout_day = ?", {provider_id, day_text(day)})
      .has_value();
}

void tell_admins_run_held(store::Tx& tx, const std::string& payout_day, const std::string& reason,
                          const std::string& base_url, std::int64_t now_ms) {
  for (const auto& admin : platform_repo::users_with_roles(tx, {core::Role::admin})) {
    notify_user(tx, admin, "payout_run_held", "The payout run of " + payout_day + " is held", reason,
                base_url + "/#/payouts", now_ms);
  }
  util::log_event("warn", "payout run held", {{"payout_day", payout_day}, {"reason", reason}});
}

RoundResult run_due_payouts(store::Store& store, const RunSettings& settings, std::int64_t now_ms) {
  RoundResult result;
  const auto providers = store.transact(
      [&](store::Tx& tx) {
        std::vector<std::string> ids;
        for (const auto& r : tx.query("SELECT DISTINCT provider_id FROM payout_settings_changes ORDER BY provider_id")) {
          ids.push_back(r.str(0));
        }
        return ids;
      },
      store::TxMode::read);
  const date::sys_days today = day_of(now_ms);
  for (int back = 6; back >= 0; --back) {
    const date::sys_days day = today - date::days(back);
    // Most days are nobody's payout day: skip them without a look at any provider.
    bool due = false;
    for (auto schedule : {payout::Schedule::weekly, payout::Schedule::monthly}) {
      for (auto method : {payout::Method::solana_usdc, payout::Method::sepa}) {
        due = due || payout::next_payout_day(schedule, method, day) == day;
      }
    }
    if (!due) continue;
    const std::string day_str = day_text(day);
    for (const auto& pid : providers) {
      auto done = store.transact([&](store::Tx& tx) -> core::Status {
        const auto s = current_settings(tx, pid, now_ms);
        if (!s || payout::next_payout_day(s->schedule, s->method, day) != day) return core::ok_status();
        if (has_payout(tx, pid, day)) return core::ok_status();
        const core::MicroUsdc amount = payable(tx, pid, payout::cutoff_ms(day));
        if (!payout::pays(s->schedule, amount, settings.minimums)) {
          ++result.below_minimum;
          return core::ok_status();
        }
        const bool held = s->method == payout::Method::solana_usdc && !settings.solana_configured;
        const std::string run_id = ensure_run(tx, day_str, s->method, held, settings.base_url, now_ms);
        if (held) {
          ++result.held;
          return core::ok_status();
        }
        const std::string id = util::new_id("pay");
        auto inserted = tx.query(
            "INSERT INTO payouts (id, run_id, provider_id, payout_day, schedule, method, destination, amount, status, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
            {id, run_id, pid, day_str, std::string(payout::to_string(s->schedule)),
             std::string(payout::to_string(s->method)), s->destination.dump(), amount,
             std::string(s->method == payout::Method::sepa ? kAwaitingBatch : kPending), now_ms, now_ms});
        if (inserted.empty()) return core::ok_status();  // another replica made it first
        if (auto st = post_once(tx, ledger::payout_started(util::new_id("ltx"), pid, amount, id, now_ms),
                                "payout:" + id + ":start");
            !st) {
          return st;
        }
        ++result.created;
        return core::ok_status();
      });
      if (!done) {
        util::log_event("error", "payout not created",
                        {{"provider_id", pid}, {"payout_day", day_str}, {"error", done.error().message}});
      }
    }
  }
  return result;
}

nlohmann::json provider_payouts(store::Tx& tx, const std::string& provider_id) {
  auto items = nlohmann::json::array();
  for (const auto& r : tx.query(payouts_query("p.provider_id = ? ORDER BY p.payout_day DESC, p.created_at DESC"),
                                {provider_id})) {
    auto j = payout_json(r);
    j.erase("run_id");
    items.push_back(std::move(j));
  }
  return items;
}

core::Result<nlohmann::json> runs_page(store::Tx& tx, const PageParams& page) {
  std::vector<std::string> ids;
  for (const auto& r : tx.query("SELECT id FROM payout_runs ORDER BY payout_day DESC, method, id"))
    ids.push_back(r.str(0));
  auto slice = page_slice(ids, page, [](const std::string& id) { return id; });
  if (!slice) return std::move(slice).error();
  auto runs = nlohmann::json::array();
  for (std::size_t i = slice->begin; i < slice->end; ++i) {
    const auto r = *tx.query_one(
        "SELECT id, payout_day, method, status, held_reason, created_at FROM payout_runs "
        "WHERE id = ?",
        {ids[i]});
    nlohmann::json run{{"id", r.str(0)},
                       {"payout_day", r.str(1)},
                       {"method", r.str(2)},
                       {"status", r.str(3)},
                       {"held_reason", r.str(4).empty() ? nlohmann::json(nullptr) : nlohmann::json(r.str(4))},
                       {"created_at", util::rfc3339(r.i64(5))}};
    auto payouts = nlohmann::json::array();
    core::MicroUsdc total = 0;
    for (const auto& p : tx.query(payouts_query("p.run_id = ? ORDER BY p.created_at, p.id"), {r.str(0)})) {
      total += p.i64(7);
      auto j = payout_json(p);
      j["provider_id"] = p.str(2);
      payouts.push_back(std::move(j));
    }
    auto batches = nlohmann::json::array();
    for (const auto& b : tx.query(std::string("SELECT ") + kBatchColumns +
                                      " FROM sepa_batches WHERE run_id = ? ORDER BY created_at, id",
                                  {r.str(0)})) {
      batches.push_back(batch_json(b));
    }
    // A run whose every payout is final is done (the stored status says only open or held).
    const bool done = !payouts.empty() && std::all_of(payouts.begin(), payouts.end(), [](const nlohmann::json& p) {
      const auto st = p["status"].get<std::string>();
      return st == kPaid || st == kReturned || st == kFailed;
    });
    if (done && run["status"] == kRunOpen) run["status"] = "done";
    run["total"] = core::format_usdc(total);
    run["payouts"] = std::move(payouts);
    run["batches"] = std::move(batches);
    runs.push_back(std::move(run));
  }
  return nlohmann::json{{"items", std::move(runs)}, {"next_cursor", slice->next_cursor}};
}

core::Result<nlohmann::json> create_sepa_batch(store::Tx& tx, const std::string& run_id, std::int64_t eur_per_usdc_micro,
                                               const Debtor& debtor, const std::string& actor, const std::string& link,
                                               std::int64_t now_ms) {
  auto run = tx.query_one("SELECT payout_day, method FROM payout_runs WHERE id = ?", {run_id});
  if (!run) return Error::make(ErrorCode::not_found, "no payout run " + run_id);
  if (run->str(1) != payout::to_string(payout::Method::sepa)) {
    return Error::make(ErrorCode::conflict, "only a SEPA run has bank batches; this one pays " + run->str(1));
  }
  if (debtor.name.empty() || debtor.iban.empty()) {
    return Error::make(ErrorCode::unprocessable,
                       "the platform's bank account is not configured: set sepa_debtor_name and sepa_debtor_iban",
                       "sepa_debtor_iban");
  }
  const auto waiting = tx.query(payouts_query("p.run_id = ? AND p.status = ? ORDER BY p.created_at, p.id"),
                                {run_id, std::string(kAwaitingBatch)});
  if (waiting.empty()) return Error::make(ErrorCode::conflict, "no payout of run " + run_id + " waits for a batch");

  const std::string batch_id = util::new_id("sepab");
  core::sepa::Batch batch;
  batch.message_id = sepa_id("GPUNEX-", batch_id);
  batch.payment_id = batch.message_id + "-1";
  batch.created_at_ms = now_ms;
  batch.execution_date = std::max(run->str(0), day_text(day_of(now_ms)));
  batch.debtor_name = debtor.name;
  batch.debtor_iban = debtor.iban;
  if (!debtor.bic.empty()) batch.debtor_bic = debtor.bic;
  std::vector<const store::Row*> in_file;
  for (const auto& p : waiting) {
    const auto dest = nlohmann::json::parse(p.str(6), nullptr, false);
    core::sepa::Transfer t;
    t.end_to_end_id = sepa_id("GPX-", p.str(0));
    t.cents = core::sepa::eur_cents(p.i64(7), eur_per_usdc_micro);
    t.creditor_name = dest.value("account_holder", "");
    t.iban = dest.value("iban", "");
    if (dest.contains("bic") && dest["bic"].is_string()) t.bic = dest["bic"].get<std::string>();
    t.remittance = "GPUnex payout " + p.str(3) + " " + core::format_usdc(p.i64(7)) + " USDC";
    if (t.cents < 1) continue;  // below a cent at this rate: returned below, never a zero transfer
    batch.transfers.push_back(std::move(t));
    in_file.push_back(&p);
  }
  for (const auto& p : waiting) {
    if (std::find(in_file.begin(), in_file.end(), &p) != in_file.end()) continue;
    if (auto st = return_payout(tx, p, "below one euro cent at the run's rate", link, now_ms); !st) {
      return std::move(st).error();
    }
  }
  if (batch.transfers.empty()) {
    return Error::make(ErrorCode::conflict, "every payout of run " + run_id + " is below one euro cent at this rate");
  }
  auto file = core::sepa::pain001(batch);
  if (!file) return std::move(file).error();
  tx.exec("INSERT INTO sepa_batches (id, run_id, message_id, eur_per_usdc_micro, transfers, total_cents, "
          "execution_date, file, status, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?)",
          {batch_id, run_id, batch.message_id, eur_per_usdc_micro, static_cast<std::int64_t>(batch.transfers.size()),
           core::sepa::control_sum_cents(batch), batch.execution_date, *file, actor, now_ms});
  for (std::size_t i = 0; i < in_file.size(); ++i) {
    tx.exec("UPDATE payouts SET status = ?, batch_id = ?, end_to_end_id = ?, eur_cents = ?, updated_at = ? "
            "WHERE id = ?",
            {std::string(kBatched), batch_id, batch.transfers[i].end_to_end_id, batch.transfers[i].cents, now_ms,
             in_file[i]->str(0)});
  }
  return batch_json(*find_batch(tx, batch_id));
}

std::optional<std::string> sepa_batch_file(store::Tx& tx, const std::string& batch_id) {
  auto r = tx.query_one("SELECT file FROM sepa_batches WHERE id = ?", {batch_id});
  if (!r) return std::nullopt;
  return r->str(0);
}

core::Result<nlohmann::json> mark_batch_sent(store::Tx& tx, const std::string& batch_id, std::int64_t now_ms) {
  auto b = find_batch(tx, batch_id);
  if (!b) return Error::make(ErrorCode::not_found, "no SEPA batch " + batch_id);
  if (b->str(7) != kSent) {
    tx.exec("UPDATE sepa_batches SET status = ?, sent_at = ? WHERE id = ?", {std::string(kSent), now_ms, batch_id});
    tx.exec("UPDATE payouts SET status = ?, updated_at = ? WHERE batch_id = ? AND status = ?",
            {std::string(kSent), now_ms, batch_id, std::string(kBatched)});
  }
  return batch_json(*find_batch(tx, batch_id));
}

core::Result<nlohmann::json> settle_payout(store::Tx& tx, const std::string& payout_id, Outcome outcome,
                                           const std::string& reason, const std::string& link, std::int64_t now_ms) {
  auto find = [&] { return tx.query_one(payouts_query("p.id = ?"), {payout_id}); };
  auto p = find();
  if (!p) return Error::make(ErrorCode::not_found, "no payout " + payout_id);
  const std::string status = p->str(8);
  const std::string wanted = outcome == Outcome::paid ? kPaid : kReturned;
  if (status == wanted) return payout_json(*p);  // said twice: nothing more to do
  // A bank transfer marked paid can still come back: SEPA returns arrive days after the money left.
  const bool returned_after_paid = outcome == Outcome::returned && status == kPaid && p->str(5) == "sepa";
  if (returned_after_paid) {
    if (auto st = return_payout(tx, *p, reason, link, now_ms); !st) return std::move(st).error();
    return payout_json(*find());
  }
  if (status == kPaid || status == kReturned || status == kFailed) {
    return Error::make(ErrorCode::conflict,
                       "payout " + payout_id + " is already " + status +
                           (status == kPaid && outcome == Outcome::returned
                                ? ": a USDC transfer on chain is final; only a bank transfer comes back"
                                : ""));
  }
  if (status != kAwaitingBatch && status != kBatched && status != kSent) {
    return Error::make(ErrorCode::conflict, "payout " + payout_id + " is " + status +
                                                " on chain: the Solana sender decides it from the chain's answer");
  }
  if (outcome == Outcome::paid) {
    if (status != kSent) {
      return Error::make(ErrorCode::conflict, "payout " + payout_id + " is " + status +
                                                  ": only a payout sent to the bank can be paid (mark its batch sent)");
    }
    if (auto st = post_once(tx, ledger::payout_paid(util::new_id("ltx"), p->i64(7), payout_id, now_ms),
                            "payout:" + payout_id + ":paid");
        !st) {
      return std::move(st).error();
    }
    tx.exec("UPDATE payouts SET status = ?, updated_at = ? WHERE id = ?", {std::string(kPaid), now_ms, payout_id});
  } else {
    if (status == kBatched) {
      return Error::make(ErrorCode::conflict, "payout " + payout_id +
                                                  " is in a batch file not yet sent: mark the batch sent first, then "
                                                  "returned if the bank returns it");
    }
    if (auto st = return_payout(tx, *p, reason, link, now_ms); !st) return std::move(st).error();
  }
  return payout_json(*find());
}

}  // namespace gpunex::server::payouts
