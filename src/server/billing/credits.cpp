#include "server/billing/credits.hpp"

#include "core/ledger.hpp"
#include "core/text.hpp"
#include "server/billing/ledger_repo.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"

namespace gpunex::server::billing {

namespace {

namespace ledger = core::ledger;
using core::Error;
using core::ErrorCode;

constexpr std::size_t kMaxReference = 200;
//! The most one credit may add: a typo guard (an extra zero), not a business limit.
constexpr core::MicroUsdc kMaxCredit = 1'000'000 * core::kMicroPerUsdc;

}  // namespace

core::Result<CreditResult> add_credit(store::Tx& tx, const CreditRequest& request, const std::string& actor,
                                      std::int64_t now_ms) {
  const std::string email = core::to_lower_ascii(core::trim(request.email));
  if (email.empty()) return Error::make(ErrorCode::missing_field, "email is required", "email");
  auto amount = core::parse_usdc(core::trim(request.amount), "Credit amount");
  if (!amount) return Error::make(ErrorCode::invalid_field, amount.error().message, "amount");
  if (*amount <= 0) return Error::make(ErrorCode::invalid_field, "Credit amount must be above zero", "amount");
  if (*amount > kMaxCredit) {
    return Error::make(ErrorCode::invalid_field,
                       "Credit amount is above " + core::format_usdc(kMaxCredit) + " USDC: split it if it is meant",
                       "amount");
  }
  const std::string reference = core::trim(request.reference);
  if (reference.empty()) {
    return Error::make(ErrorCode::missing_field, "reference is required: the payment this credit is for", "reference");
  }
  if (reference.size() > kMaxReference) {
    return Error::make(ErrorCode::invalid_field, "reference is longer than 200 characters", "reference");
  }
  for (unsigned char c : reference) {
    if (c < 0x20 || c == 0x7f) {
      return Error::make(ErrorCode::invalid_field, "reference must be one line of text", "reference");
    }
  }
  auto user = platform_repo::find_user_by_email(tx, email);
  if (!user) return Error::make(ErrorCode::not_found, "no account has the e-mail " + email, "email");

  auto t = ledger::credit(util::new_id("ltx"), user->id, *amount, actor, reference, now_ms);
  if (!t) return std::move(t).error();
  auto posted = post(tx, *t, "credit:" + user->id + ":" + reference);
  if (!posted) return std::move(posted).error();
  CreditResult result{*posted, user->id, user->email, *amount, 0, *posted != t->id};
  if (result.repeated) {
    auto first = find_transaction(tx, *posted);
    core::MicroUsdc first_amount = 0;
    if (first) {
      for (const auto& e : first->entries) {
        if (e.account == ledger::Account::customer(user->id)) first_amount += e.amount;
      }
    }
    if (first_amount != *amount) {
      return Error::make(ErrorCode::conflict,
                         "reference '" + reference + "' was already credited to " + email + " with " +
                             core::format_usdc(first_amount) + " USDC (transaction " + *posted + ")",
                         "reference")
          .with_code("duplicate_reference");
    }
  }
  result.balance = balance(tx, ledger::Account::customer(user->id));
  return result;
}

}  // namespace gpunex::server::billing
