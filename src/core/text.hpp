#pragma once
// Small text rules shared by every validator: e-mail addresses, trimming, case.

#include <string>
#include <string_view>

namespace gpunex::core {

//! A pragmatic e-mail check: one '@', a non-empty local part, a dotted domain, no spaces, ≤ 254 chars.
bool is_valid_email(std::string_view email);
//! Lower-cases ASCII letters (e-mail addresses are compared case-insensitively).
std::string to_lower_ascii(std::string_view s);
//! Whether a and b are the same text but for the case of ASCII letters.
bool equal_ignoring_ascii_case(std::string_view a, std::string_view b);
//! Removes leading and trailing ASCII white space.
std::string trim(std::string_view s);
//! The length (1-4) of the well-formed UTF-8 sequence at s[i], or 0 when none starts there (a stray
//! continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short by the end of s).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);
//! True when s is valid UTF-8 without control characters (C0, DEL, C1) other than tab and newline, and
//! without bidirectional overrides or isolates (U+202A–U+202E, U+2066–U+2069): text fit to store and show.
bool is_clean_utf8(std::string_view s);
//! is_clean_utf8 without tab or newline: a name, a host name, a version — anything shown on one line.
bool is_single_line_text(std::string_view s);
//! A DNS name (letters, digits and hyphens in dot-separated labels of 1-63, at most 253 in all) or an
//! IPv4 or IPv6 address: a host a person can be told to connect to.
bool is_host_name_or_address(std::string_view host);
//! host:port, with an IPv6 address in brackets ("[2001:db8::1]:40000").
std::string host_port(std::string_view host, int port);
//! `url` with the credentials of its authority (user:password@) replaced by "***@", for logs and config dumps.
std::string redact_url_credentials(std::string_view url);
//! A number for a person: thousands separated, at most 6 decimals, no trailing zeros ("16,384", "0.01").
std::string format_number(double v);
//! `s` with its first letter upper-cased (ASCII), for the start of a sentence.
std::string capitalize(std::string_view s);
//! The value of a lower-case hex digit (0-9, a-f), or -1: the one form the stored and signed hex texts take.
int lower_hex_value(char c);

}  // namespace gpunex::core
