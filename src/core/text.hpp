#pragma once
// Small text rules shared by every validator: e-mail addresses, trimming, case.

#include <string>
#include <string_view>

namespace gpunex::core {

//! A pragmatic e-mail check: one '@', a non-empty local part, a dotted domain, no spaces, ≤ 254 chars.
bool is_valid_email(std::string_view email);
//! Lower-cases ASCII letters (e-mail addresses are compared case-insensitively).
std::string to_lower_ascii(std::string_view s);
//! Removes leading and trailing ASCII white space.
std::string trim(std::string_view s);
//! True when s is valid UTF-8 without control characters other than tab and newline.
bool is_clean_utf8(std::string_view s);
//! A number for a person: thousands separated, at most 6 decimals, no trailing zeros ("16,384", "0.01").
std::string format_number(double v);
//! `s` with its first letter upper-cased (ASCII), for the start of a sentence.
std::string capitalize(std::string_view s);

}  // namespace gpunex::core
