#include "protocol/challenge.hpp"

#include <charconv>

#include "core/json_reader.hpp"
#include "protocol/fields.hpp"

namespace gpunex::protocol {

using core::Error;
using core::ErrorCode;
using core::ObjectReader;

std::string seed_text(std::uint64_t seed) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, seed >>= 4) s[static_cast<std::size_t>(i)] = kHex[seed & 15];
  return s;
}

std::optional<std::uint64_t> parse_seed(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

nlohmann::json ChallengeSpec::to_json() const {
  nlohmann::json j = {{"id", id}, {"kind", kind}, {"gpu_uuid", gpu_uuid}, {"allowed_s", allowed_s}};
  if (kind == kGemmChallenge) {
    j.update({{"seed_a", seed_text(seed_a)}, {"seed_b", seed_text(seed_b)}, {"n", n}, {"products", products}});
  } else {
    j.update({{"fill_seed", seed_text(fill_seed)}, {"slices", slices}, {"slice_words", slice_words}});
  }
  return j;
}

std::vector<ChallengeSpec> parse_challenge_specs(const nlohmann::json& list) {
  std::vector<ChallengeSpec> out;
  if (!list.is_array()) return out;
  for (const auto& j : list) {
    if (!j.is_object()) continue;
    ChallengeSpec s;
    s.id = j.value("id", "");
    s.kind = j.value("kind", "");
    s.gpu_uuid = j.value("gpu_uuid", "");
    s.allowed_s = j.contains("allowed_s") && j["allowed_s"].is_number() ? j["allowed_s"].get<double>() : 0;
    if (s.id.empty() || s.gpu_uuid.empty()) continue;
    const auto seed = [&](const char* key) { return parse_seed(j.value(key, "")); };
    const auto count = [&](const char* key) {
      return j.contains(key) && j[key].is_number_integer() ? j[key].get<std::int64_t>() : std::int64_t{0};
    };
    if (s.kind == kGemmChallenge) {
      const auto a = seed("seed_a"), b = seed("seed_b");
      s.n = count("n");
      s.products = count("products");
      if (!a || !b || s.n < 1 || s.n > kMaxGemmN || s.products < 1 || s.products > kMaxGemmProducts) continue;
      s.seed_a = *a;
      s.seed_b = *b;
    } else if (s.kind == kVramChallenge) {
      const auto f = seed("fill_seed");
      s.slices = count("slices");
      s.slice_words = count("slice_words");
      if (!f || s.slices < 1 || s.slice_words < 1) continue;
      s.fill_seed = *f;
    } else {
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

//! `opened`: at most kMaxOpenedRows rows of at most kMaxGemmN integers, each with its block's leaves
//! (16 hex digits each) and Merkle path (64 hex digits each). The field is named in every error.
core::Result<std::vector<core::challenge::OpenedRow>> parse_opened(const nlohmann::json& list) {
  const auto bad = [](const std::string& what) {
    return Error::make(ErrorCode::invalid_field, what, std::string("opened"));
  };
  if (!list.is_array() || list.size() > static_cast<std::size_t>(kMaxOpenedRows)) {
    return bad("must be an array of at most " + std::to_string(kMaxOpenedRows) + " rows");
  }
  std::vector<core::challenge::OpenedRow> out;
  for (const auto& j : list) {
    if (!j.is_object() || !j.contains("index") || !j["index"].is_number_unsigned()) {
      return bad("each row is an object with an index");
    }
    core::challenge::OpenedRow o;
    o.index = j["index"].get<std::uint64_t>();
    const auto* values = j.contains("values") ? &j["values"] : nullptr;
    if (values == nullptr || !values->is_array() || values->size() > static_cast<std::size_t>(kMaxGemmN)) {
      return bad("each row's values are an array of at most " + std::to_string(kMaxGemmN) + " integers");
    }
    o.values.reserve(values->size());
    for (const auto& v : *values) {
      if (!v.is_number_integer()) return bad("each row's values are integers");
      o.values.push_back(v.get<std::int64_t>());
    }
    const auto* block = j.contains("block") ? &j["block"] : nullptr;
    if (block == nullptr || !block->is_array() || block->size() > core::challenge::kLeafBlock) {
      return bad("each row's block is an array of at most " + std::to_string(core::challenge::kLeafBlock) + " digests");
    }
    for (const auto& leaf : *block) {
      const auto d = leaf.is_string() ? parse_seed(leaf.get<std::string>()) : std::nullopt;
      if (!d) return bad("each row's block holds 16-hex-digit digests");
      o.block.push_back(*d);
    }
    const auto* path = j.contains("path") ? &j["path"] : nullptr;
    if (path == nullptr || !path->is_array() || path->size() > 64) {
      return bad("each row's path is an array of at most 64 hashes");
    }
    for (const auto& h : *path) {
      const auto d = h.is_string() ? core::challenge::parse_digest(h.get<std::string>()) : std::nullopt;
      if (!d) return bad("each row's path holds 64-hex-digit hashes");
      o.path.push_back(*d);
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

nlohmann::json ChallengeAnswer::to_json() const {
  nlohmann::json j = {
      {"protocol_version", protocol_version}, {"machine_id", machine_id}, {"challenge_id", challenge_id}};
  if (root) j["root"] = *root;
  if (opened) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& o : *opened) {
      nlohmann::json block = nlohmann::json::array(), path = nlohmann::json::array();
      for (auto leaf : o.block) block.push_back(seed_text(leaf));
      for (const auto& d : o.path) path.push_back(core::challenge::hex(d));
      rows.push_back(
          {{"index", o.index}, {"values", o.values}, {"block", std::move(block)}, {"path", std::move(path)}});
    }
    j["opened"] = std::move(rows);
  }
  if (filled) j["filled"] = true;
  if (digests) j["digests"] = *digests;
  return j;
}

core::Result<ChallengeAnswer> parse_challenge_answer(const nlohmann::json& body) {
  ChallengeAnswer a;
  ObjectReader r(body);
  a.protocol_version = detail::protocol_version(r);
  a.machine_id = r.required_string("machine_id", 1, 64);
  a.challenge_id = r.required_string("challenge_id", 1, 64);
  a.filled = r.optional_bool("filled").value_or(false);
  r.describe_field("root", {{"pattern", "^[0-9a-f]{64}$"}});
  // opened and digests are checked by hand below (and in parse_opened): what they are checked for.
  r.describe_field("opened", {{"type", "array"},
                              {"maxItems", kMaxOpenedRows},
                              {"items", {{"type", "object"}, {"required", {"index", "values", "block"}}}},
                              {"description", "The opened rows: {index, values (integers), block (digests)}."}});
  r.describe_field(
      "digests", {{"type", "array"}, {"maxItems", kMaxVramSlices}, {"items", {{"type", "string"}, {"maxLength", 64}}}});
  r.describe_field("filled", {{"description", "Exactly one of root, opened, filled and digests is given."}});
  if (auto root = r.optional_string("root", 64)) {
    if (!core::challenge::parse_digest(*root)) {
      r.fail(Error::make(ErrorCode::invalid_field, "must be 64 lowercase hex digits", std::string("root")));
    }
    a.root = std::move(*root);
  }
  if (const auto* o = r.optional_value("opened"); o != nullptr) {
    if (auto rows = parse_opened(*o)) {
      a.opened = std::move(*rows);
    } else {
      r.fail(std::move(rows).error());
    }
  }
  if (const auto* d = r.optional_value("digests"); d != nullptr) {
    std::vector<std::string> v;
    if (!d->is_array() || d->size() > static_cast<std::size_t>(kMaxVramSlices)) {
      r.fail(Error::make(ErrorCode::invalid_field, "must be an array of at most 64 digests", std::string("digests")));
    } else {
      for (const auto& x : *d) {
        if (!x.is_string() || x.get<std::string>().size() > 64) {
          r.fail(
              Error::make(ErrorCode::invalid_field, "must be an array of hex SHA-256 digests", std::string("digests")));
          break;
        }
        v.push_back(x.get<std::string>());
      }
      a.digests = std::move(v);
    }
  }
  if (!r.failed() && static_cast<int>(a.root.has_value()) + static_cast<int>(a.opened.has_value()) +
                             static_cast<int>(a.filled) + static_cast<int>(a.digests.has_value()) !=
                         1) {
    r.fail(Error::make(ErrorCode::invalid_field, "an answer carries exactly one of root, opened, filled and digests",
                       std::string("root")));
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return a;
}

nlohmann::json ChallengeReply::to_json() const {
  nlohmann::json j = {{"challenge_id", challenge_id}, {"status", status}};
  if (!rows.empty()) j["rows"] = rows;
  if (!slices.empty()) j["slices"] = slices;
  if (allowed_s) j["allowed_s"] = *allowed_s;
  if (reason) j["reason"] = *reason;
  return j;
}

ChallengeReply parse_challenge_reply(const nlohmann::json& body) {
  ChallengeReply r;
  if (!body.is_object()) return r;
  r.challenge_id = body.value("challenge_id", "");
  r.status = body.value("status", "");
  const auto numbers = [&](const char* key, std::vector<std::uint64_t>& out) {
    if (!body.contains(key) || !body[key].is_array()) return;
    for (const auto& s : body[key]) {
      if (s.is_number_unsigned()) out.push_back(s.get<std::uint64_t>());
    }
  };
  numbers("rows", r.rows);
  numbers("slices", r.slices);
  if (body.contains("allowed_s") && body["allowed_s"].is_number()) r.allowed_s = body["allowed_s"].get<double>();
  if (body.contains("reason") && body["reason"].is_string()) r.reason = body["reason"].get<std::string>();
  return r;
}

}  // namespace gpunex::protocol
