#pragma once
// SEPA credit transfers (DESIGN §3.11, issue #18), pure: the ISO 20022 pain.001.001.03 file a payout
// run hands to the platform's bank, and the rules around it beyond the XSD: EUR only, amounts
// 0.01–999,999,999.99 with two decimals, and only the characters a-z A-Z 0-9 / - ? : ( ) . , ' +
// and space in any text (names, ids, remittance information).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/money.hpp"
#include "core/result.hpp"

namespace gpunex::core::sepa {

//! Whether every character of `s` is in SEPA's set.
bool sepa_text(std::string_view s);

//! `s` in SEPA's set, at most `max_chars` long: common accented Latin letters lose their accent
//! (é → e, ß → ss, Æ → AE), & becomes +, and anything else left outside the set becomes a space
//! (runs of spaces collapse, ends trimmed). Never the raw text.
std::string sepa_clean(std::string_view s, std::size_t max_chars);

//! An exchange rate as micro-EUR per USDC (0.92 EUR per USDC = 920'000), entered by the operator for
//! a batch. Bounds keep a mistyped rate from paying a thousandfold: 0.01–100 EUR per USDC.
inline constexpr std::int64_t kMinRateMicro = 10'000;
inline constexpr std::int64_t kMaxRateMicro = 100'000'000;
//! "0.92" → 920'000; an error naming `field` when it is not a decimal within the bounds.
Result<std::int64_t> parse_rate(std::string_view text, const std::string& field = "eur_per_usdc");

//! What `amount` micro-USDC is in euro cents at `rate_micro`, rounded down (the platform never sends
//! more than it owes).
std::int64_t eur_cents(MicroUsdc amount, std::int64_t rate_micro);
//! 12345 → "123.45".
std::string cents_text(std::int64_t cents);

struct Transfer {
  std::string end_to_end_id;  // ≤ 35, SEPA's set; the provider's statement shows it
  std::int64_t cents = 0;     // 1 – 99'999'999'999
  std::string creditor_name;  // cleaned to 70
  std::string iban;           // normalized
  std::optional<std::string> bic;
  std::string remittance;  // unstructured, cleaned to 140
};

struct Batch {
  std::string message_id;      // ≤ 35, unique per file
  std::string payment_id;      // the PmtInf id, ≤ 35
  std::int64_t created_at_ms = 0;
  std::string execution_date;  // YYYY-MM-DD
  std::string debtor_name;     // the platform
  std::string debtor_iban;
  std::optional<std::string> debtor_bic;
  std::vector<Transfer> transfers;
};

//! The control sum of the transfers in cents.
std::int64_t control_sum_cents(const Batch& batch);

//! The pain.001.001.03 document (UTF-8, only SEPA's characters in its text), or an error naming what
//! breaks the rules: no transfers, an amount out of range, an id too long or outside the set, an
//! invalid IBAN or BIC.
Result<std::string> pain001(const Batch& batch);

}  // namespace gpunex::core::sepa
