#pragma once
// Customer credit: an operator adds prepaid USDC to an account (`gpunex-server admin credit`,
// POST /v1/admin/credits, the dashboard's Credit page). Each credit is one ledger transaction,
// money_in → the customer's balance, named by the operator's reference (the bank transfer, the
// invoice) so the same payment is never credited twice.

#include <cstdint>
#include <string>

#include "core/money.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server::billing {

struct CreditRequest {
  std::string email;      // the account credited
  std::string amount;     // decimal USDC, as typed ("100.00")
  std::string reference;  // the operator's reference for the payment
};

struct CreditResult {
  std::string transaction_id;
  std::string user_id;
  std::string email;
  core::MicroUsdc amount = 0;
  core::MicroUsdc balance = 0;  // the customer's balance after it
  bool repeated = false;        // this reference was credited before with the same amount: nothing new
};

//! Checks the request (errors name the field: email, amount, reference) and posts the credit. The same
//! reference for the same account again: with the same amount it is a retry and answers the first
//! credit (repeated); with another amount it is refused (409 duplicate_reference).
core::Result<CreditResult> add_credit(store::Tx& tx, const CreditRequest& request, const std::string& actor,
                                      std::int64_t now_ms);

}  // namespace gpunex::server::billing
