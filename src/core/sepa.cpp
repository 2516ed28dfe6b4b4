#include "core/sepa.hpp"

#include <array>
#include <utility>

#include "core/payout_destination.hpp"
#include "core/rfc3339.hpp"
#include "core/text.hpp"

namespace gpunex::core::sepa {

namespace {

constexpr std::int64_t kMaxCents = 99'999'999'999;  // 999,999,999.99 EUR

bool sepa_char(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ') return true;
  return std::string_view("/-?:().,'+").find(static_cast<char>(c)) != std::string_view::npos;
}

// Latin letters with accents (UTF-8) and what a bank file writes instead.
constexpr std::array<std::pair<std::string_view, std::string_view>, 62> kFold{{
    {"à", "a"}, {"á", "a"}, {"â", "a"}, {"ã", "a"}, {"ä", "a"}, {"å", "a"}, {"æ", "ae"}, {"ç", "c"},
    {"è", "e"}, {"é", "e"}, {"ê", "e"}, {"ë", "e"}, {"ì", "i"}, {"í", "i"}, {"î", "i"}, {"ï", "i"},
    {"ñ", "n"}, {"ò", "o"}, {"ó", "o"}, {"ô", "o"}, {"õ", "o"}, {"ö", "o"}, {"ø", "o"}, {"ù", "u"},
    {"ú", "u"}, {"û", "u"}, {"ü", "u"}, {"ý", "y"}, {"ÿ", "y"}, {"ß", "ss"}, {"À", "A"}, {"Á", "A"},
    {"Â", "A"}, {"Ã", "A"}, {"Ä", "A"}, {"Å", "A"}, {"Æ", "AE"}, {"Ç", "C"}, {"È", "E"}, {"É", "E"},
    {"Ê", "E"}, {"Ë", "E"}, {"Ì", "I"}, {"Í", "I"}, {"Î", "I"}, {"Ï", "I"}, {"Ñ", "N"}, {"Ò", "O"},
    {"Ó", "O"}, {"Ô", "O"}, {"Õ", "O"}, {"Ö", "O"}, {"Ø", "O"}, {"Ù", "U"}, {"Ú", "U"}, {"Û", "U"},
    {"Ü", "U"}, {"Ý", "Y"}, {"ł", "l"}, {"Ł", "L"}, {"š", "s"}, {"Š", "S"},
}};

Error broken(std::string message, std::string field) {
  return Error::make(ErrorCode::invalid_field, std::move(message), std::move(field));
}

Status check_id(std::string_view id, const std::string& field) {
  if (id.empty() || id.size() > 35) return broken(field + " must be 1 to 35 characters", field);
  if (!sepa_text(id) || id.front() == ' ' || id.back() == ' ') {
    return broken(field + " may hold only SEPA's characters", field);
  }
  return ok_status();
}

std::string tag(std::string_view name, std::string_view text) {
  std::string out;
  out.reserve(name.size() * 2 + text.size() + 5);
  out.append("<").append(name).append(">");
  for (char c : text) {  // SEPA's set needs no escaping; kept for safety should the set grow
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  out.append("</").append(name).append(">");
  return out;
}

std::string agent(const std::optional<std::string>& bic) {
  if (bic) return "<FinInstnId>" + tag("BIC", *bic) + "</FinInstnId>";
  return "<FinInstnId><Othr><Id>NOTPROVIDED</Id></Othr></FinInstnId>";
}

}  // namespace

bool sepa_text(std::string_view s) {
  for (unsigned char c : s) {
    if (!sepa_char(c)) return false;
  }
  return true;
}

std::string sepa_clean(std::string_view s, std::size_t max_chars) {
  std::string out;
  auto put = [&](std::string_view piece) {
    for (char c : piece) {
      if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
      out += c;
    }
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '&') put("+");
      else if (sepa_char(c)) put(std::string_view(&s[i], 1));
      else put(" ");
      ++i;
      continue;
    }
    const std::size_t n = std::max<std::size_t>(utf8_sequence_length(s, i), 1);  // a broken byte: a space
    const std::string_view seq = s.substr(i, n);
    std::string_view folded = " ";
    for (const auto& [from, to] : kFold) {
      if (from == seq) folded = to;
    }
    put(folded);
    i += n;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > max_chars) out.resize(max_chars);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

Result<std::int64_t> parse_rate(std::string_view text, const std::string& field) {
  auto rate = parse_usdc(text, "the rate");
  if (!rate) return broken("must be a decimal number of euros per USDC, such as 0.92", field);
  if (*rate < kMinRateMicro || *rate > kMaxRateMicro) {
    return broken("must be between 0.01 and 100 euros per USDC", field);
  }
  return *rate;
}

std::int64_t eur_cents(MicroUsdc amount, std::int64_t rate_micro) {
  if (amount <= 0 || rate_micro <= 0) return 0;
  // micro-USDC × micro-EUR/USDC = 10^-12 EUR; a cent is 10^-2 EUR.
  const __int128 pico_eur = static_cast<__int128>(amount) * rate_micro;
  return static_cast<std::int64_t>(pico_eur / 10'000'000'000LL);
}

std::string cents_text(std::int64_t cents) {
  std::string frac = std::to_string(cents % 100);
  if (frac.size() < 2) frac.insert(0, "0");
  return std::to_string(cents / 100) + "." + frac;
}

std::int64_t control_sum_cents(const Batch& batch) {
  std::int64_t sum = 0;
  for (const auto& t : batch.transfers) sum += t.cents;
  return sum;
}

Result<std::string> pain001(const Batch& batch) {
  if (batch.transfers.empty()) return broken("a SEPA file needs at least one transfer", "transfers");
  if (auto st = check_id(batch.message_id, "message_id"); !st) return std::move(st).error();
  if (auto st = check_id(batch.payment_id, "payment_id"); !st) return std::move(st).error();
  if (!payout::valid_iban(batch.debtor_iban)) return broken("the platform's IBAN is not valid", "debtor_iban");
  if (batch.debtor_bic && !payout::valid_bic(*batch.debtor_bic)) {
    return broken("the platform's BIC is not valid", "debtor_bic");
  }
  const std::string debtor = sepa_clean(batch.debtor_name, 70);
  if (debtor.empty()) return broken("the platform's account holder name is missing", "debtor_name");
  if (batch.execution_date.size() != 10) return broken("the execution date must be YYYY-MM-DD", "execution_date");

  std::string body;
  for (std::size_t i = 0; i < batch.transfers.size(); ++i) {
    const auto& t = batch.transfers[i];
    const std::string at = "transfers[" + std::to_string(i) + "]";
    if (auto st = check_id(t.end_to_end_id, at + ".end_to_end_id"); !st) return std::move(st).error();
    if (t.cents < 1 || t.cents > kMaxCents) {
      return broken("a SEPA amount must be 0.01 to 999999999.99 EUR", at + ".amount");
    }
    if (!payout::valid_iban(t.iban)) return broken("the IBAN is not valid", at + ".iban");
    if (t.bic && !payout::valid_bic(*t.bic)) return broken("the BIC is not valid", at + ".bic");
    const std::string name = sepa_clean(t.creditor_name, 70);
    if (name.empty()) return broken("the account holder's name is empty once cleaned", at + ".creditor_name");
    body += "<CdtTrfTxInf><PmtId>" + tag("EndToEndId", t.end_to_end_id) + "</PmtId>";
    body += "<Amt><InstdAmt Ccy=\"EUR\">" + cents_text(t.cents) + "</InstdAmt></Amt>";
    if (t.bic) body += "<CdtrAgt>" + agent(t.bic) + "</CdtrAgt>";
    body += "<Cdtr>" + tag("Nm", name) + "</Cdtr>";
    body += "<CdtrAcct><Id>" + tag("IBAN", t.iban) + "</Id></CdtrAcct>";
    const std::string remittance = sepa_clean(t.remittance, 140);
    if (!remittance.empty()) body += "<RmtInf>" + tag("Ustrd", remittance) + "</RmtInf>";
    body += "</CdtTrfTxInf>\n";
  }

  const std::string count = std::to_string(batch.transfers.size());
  const std::string sum = cents_text(control_sum_cents(batch));
  std::string created = format_rfc3339_ms(batch.created_at_ms / 1000 * 1000);  // ISODateTime, whole seconds
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.03\" "
      "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\n<CstmrCdtTrfInitn>\n";
  out += "<GrpHdr>" + tag("MsgId", batch.message_id) + tag("CreDtTm", created) + tag("NbOfTxs", count) +
         tag("CtrlSum", sum) + "<InitgPty>" + tag("Nm", debtor) + "</InitgPty></GrpHdr>\n";
  out += "<PmtInf>" + tag("PmtInfId", batch.payment_id) + tag("PmtMtd", "TRF") + tag("BtchBookg", "true") +
         tag("NbOfTxs", count) + tag("CtrlSum", sum) + "<PmtTpInf><SvcLvl>" + tag("Cd", "SEPA") +
         "</SvcLvl></PmtTpInf>" + tag("ReqdExctnDt", batch.execution_date) + "<Dbtr>" + tag("Nm", debtor) +
         "</Dbtr><DbtrAcct><Id>" + tag("IBAN", batch.debtor_iban) + "</Id>" + tag("Ccy", "EUR") +
         "</DbtrAcct><DbtrAgt>" + agent(batch.debtor_bic) + "</DbtrAgt>" + tag("ChrgBr", "SLEV") + "\n";
  out += body;
  out += "</PmtInf>\n</CstmrCdtTrfInitn>\n</Document>\n";
  return out;
}

}  // namespace gpunex::core::sepa
