#include "server/payouts/chain_client.hpp"

#include <atomic>

#include <nlohmann/json.hpp>

#include "util/crypto.hpp"
#include "util/http_client.hpp"

namespace gpunex::server::payouts {

namespace {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

class JsonRpcClient : public ChainClient {
 public:
  JsonRpcClient(const std::string& url, int timeout_ms)
      : http_(url, util::HttpClientOptions{std::chrono::milliseconds(timeout_ms), {}, true, {}}) {}

  core::Result<LatestBlockhash> latest_blockhash() override {
    auto r = call("getLatestBlockhash", json::array({{{"commitment", "confirmed"}}}));
    if (!r) return std::move(r).error();
    const auto& v = (*r)["value"];
    if (!v.is_object() || !v["blockhash"].is_string() || !v["lastValidBlockHeight"].is_number_unsigned()) {
      return bad("getLatestBlockhash");
    }
    auto hash = core::solana::key_from_base58(v["blockhash"].get<std::string>());
    if (!hash) return bad("getLatestBlockhash");
    return LatestBlockhash{*hash, v["lastValidBlockHeight"].get<std::uint64_t>()};
  }

  core::Result<std::string> send_transaction(const core::solana::Bytes& wire) override {
    auto r = call("sendTransaction",
                  json::array({util::base64_encode(wire),
                               {{"encoding", "base64"}, {"preflightCommitment", "confirmed"}, {"maxRetries", 0}}}));
    if (!r) return std::move(r).error();
    if (!r->is_string()) return bad("sendTransaction");
    return r->get<std::string>();
  }

  core::Result<std::vector<std::optional<SignatureStatus>>> signature_statuses(
      const std::vector<std::string>& signatures) override {
    auto r = call("getSignatureStatuses", json::array({signatures, {{"searchTransactionHistory", true}}}));
    if (!r) return std::move(r).error();
    const auto& v = (*r)["value"];
    if (!v.is_array() || v.size() != signatures.size()) return bad("getSignatureStatuses");
    std::vector<std::optional<SignatureStatus>> out;
    for (const auto& s : v) {
      if (s.is_null()) {
        out.emplace_back(std::nullopt);
        continue;
      }
      SignatureStatus st;
      if (s.contains("err") && !s["err"].is_null()) st.err = s["err"].dump();
      const auto c = s.find("confirmationStatus");
      st.confirmation = c != s.end() && c->is_string() ? c->get<std::string>() : "processed";
      out.emplace_back(std::move(st));
    }
    return out;
  }

  core::Result<std::uint64_t> block_height() override {
    auto r = call("getBlockHeight", json::array({{{"commitment", "confirmed"}}}));
    if (!r) return std::move(r).error();
    if (!r->is_number_unsigned()) return bad("getBlockHeight");
    return r->get<std::uint64_t>();
  }

  core::Result<std::uint64_t> token_balance(const core::solana::Key& account) override {
    auto r = call("getTokenAccountBalance", json::array({core::solana::to_base58(account)}));
    if (!r) {
      // A token account that does not exist yet holds nothing.
      if (r.error().message.find("could not find account") != std::string::npos) return std::uint64_t{0};
      return std::move(r).error();
    }
    const auto& v = (*r)["value"];
    if (!v.is_object() || !v["amount"].is_string()) return bad("getTokenAccountBalance");
    return std::stoull(v["amount"].get<std::string>());
  }

  core::Result<std::uint64_t> sol_balance(const core::solana::Key& account) override {
    auto r = call("getBalance", json::array({core::solana::to_base58(account)}));
    if (!r) return std::move(r).error();
    const auto& v = (*r)["value"];
    if (!v.is_number_unsigned()) return bad("getBalance");
    return v.get<std::uint64_t>();
  }

 private:
  static Error bad(const std::string& method) {
    return Error::make(ErrorCode::unavailable, "the Solana node's answer to " + method + " is not what it should be");
  }

  //! One call; transport failures, HTTP errors and JSON-RPC errors are all `unavailable` errors with
  //! the node's words (the caller decides what is final from the chain's state, never from these).
  core::Result<json> call(const std::string& method, json params) {
    const json req{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", std::move(params)}};
    auto res = http_.request("POST", "", req.dump(), {{"Content-Type", "application/json"}});
    if (!res) return std::move(res).error();
    if (res->status != 200) {
      return Error::make(ErrorCode::unavailable, method + ": HTTP " + std::to_string(res->status));
    }
    auto body = json::parse(res->body, nullptr, false);
    if (!body.is_object()) return bad(method);
    if (body.contains("error")) {
      return Error::make(ErrorCode::unavailable, method + ": " + body["error"].value("message", body["error"].dump()));
    }
    if (!body.contains("result")) return bad(method);
    return body["result"];
  }

  util::HttpClient http_;
  std::atomic<std::int64_t> id_{0};
};

}  // namespace

std::unique_ptr<ChainClient> make_json_rpc_client(const std::string& url, int timeout_ms) {
  return std::make_unique<JsonRpcClient>(url, timeout_ms);
}

}  // namespace gpunex::server::payouts
