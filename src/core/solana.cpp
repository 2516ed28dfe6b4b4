#include "core/solana.hpp"

#include <algorithm>

namespace gpunex::core::solana {

namespace {

Key must_key(std::string_view base58) {
  auto k = key_from_base58(base58);
  return k ? *k : Key{};
}

void put_u32(Bytes& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u64(Bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

std::string_view view(const Bytes& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
std::string_view view(const Key& k) { return {reinterpret_cast<const char*>(k.data()), k.size()}; }

}  // namespace

std::optional<Key> key_from_base58(std::string_view text) {
  auto bytes = payout::base58_decode(text);
  if (!bytes || bytes->size() != 32) return std::nullopt;
  Key k{};
  std::copy(bytes->begin(), bytes->end(), k.begin());
  return k;
}

std::string to_base58(const Key& key) { return payout::base58_encode(Bytes(key.begin(), key.end())); }

const Key kSystemProgram = must_key("11111111111111111111111111111111");
const Key kTokenProgram = must_key("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
const Key kAssociatedTokenProgram = must_key("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
const Key kComputeBudgetProgram = must_key("ComputeBudget111111111111111111111111111111");
const Key kMemoProgram = must_key("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

Bytes shortvec(std::uint16_t n) {
  Bytes out;
  std::uint32_t v = n;
  do {
    std::uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out.push_back(b);
  } while (v != 0);
  return out;
}

std::optional<std::pair<Key, std::uint8_t>> find_program_address(const std::vector<Bytes>& seeds, const Key& program,
                                                                 Sha256 sha256) {
  static constexpr std::string_view kMarker = "ProgramDerivedAddress";
  for (int bump = 255; bump >= 0; --bump) {
    const std::uint8_t b = static_cast<std::uint8_t>(bump);
    std::vector<std::string_view> parts;
    for (const auto& s : seeds) parts.push_back(view(s));
    parts.emplace_back(reinterpret_cast<const char*>(&b), 1);
    parts.push_back(view(program));
    parts.push_back(kMarker);
    const Key candidate = sha256(parts);
    if (!payout::on_ed25519_curve(candidate)) return std::make_pair(candidate, b);
  }
  return std::nullopt;
}

Key associated_token_address(const Key& wallet, const Key& mint, Sha256 sha256) {
  const auto found = find_program_address(
      {Bytes(wallet.begin(), wallet.end()), Bytes(kTokenProgram.begin(), kTokenProgram.end()),
       Bytes(mint.begin(), mint.end())},
      kAssociatedTokenProgram, sha256);
  return found ? found->first : Key{};  // no bump works: 2^-256, never in practice
}

Instruction set_compute_unit_limit(std::uint32_t units) {
  Instruction i{kComputeBudgetProgram, {}, {0x02}};
  put_u32(i.data, units);
  return i;
}

Instruction set_compute_unit_price(std::uint64_t micro_lamports) {
  Instruction i{kComputeBudgetProgram, {}, {0x03}};
  put_u64(i.data, micro_lamports);
  return i;
}

Instruction create_associated_token_account_idempotent(const Key& payer, const Key& account, const Key& wallet,
                                                        const Key& mint) {
  return {kAssociatedTokenProgram,
          {{payer, true, true},
           {account, false, true},
           {wallet, false, false},
           {mint, false, false},
           {kSystemProgram, false, false},
           {kTokenProgram, false, false}},
          {0x01}};
}

Instruction transfer_checked(const Key& source, const Key& mint, const Key& destination, const Key& owner,
                             std::uint64_t amount, std::uint8_t decimals) {
  Instruction i{kTokenProgram,
                {{source, false, true}, {mint, false, false}, {destination, false, true}, {owner, true, false}},
                {0x0C}};
  put_u64(i.data, amount);
  i.data.push_back(decimals);
  return i;
}

Instruction memo(std::string_view text) { return {kMemoProgram, {}, Bytes(text.begin(), text.end())}; }

Message compile_message(const Key& fee_payer, const std::vector<Instruction>& instructions, const Hash& blockhash) {
  // Every key once, with the strongest role it is given, in the order first seen.
  std::vector<AccountMeta> metas{{fee_payer, true, true}};
  auto add = [&](const AccountMeta& m) {
    for (auto& seen : metas) {
      if (seen.key == m.key) {
        seen.signer = seen.signer || m.signer;
        seen.writable = seen.writable || m.writable;
        return;
      }
    }
    metas.push_back(m);
  };
  for (const auto& ins : instructions) {
    for (const auto& a : ins.accounts) add(a);
    add({ins.program, false, false});
  }
  auto group = [](const AccountMeta& m) { return (m.signer ? 0 : 2) + (m.writable ? 0 : 1); };
  std::stable_sort(metas.begin() + 1, metas.end(),
                   [&](const AccountMeta& a, const AccountMeta& b) { return group(a) < group(b); });

  Message msg;
  msg.blockhash = blockhash;
  for (const auto& m : metas) {
    msg.keys.push_back(m.key);
    if (m.signer) ++msg.required_signatures;
    if (m.signer && !m.writable) ++msg.readonly_signed;
    if (!m.signer && !m.writable) ++msg.readonly_unsigned;
  }
  auto index = [&](const Key& k) {
    return static_cast<std::uint8_t>(std::find(msg.keys.begin(), msg.keys.end(), k) - msg.keys.begin());
  };
  Bytes& out = msg.bytes;
  out = {msg.required_signatures, msg.readonly_signed, msg.readonly_unsigned};
  append(out, shortvec(static_cast<std::uint16_t>(msg.keys.size())));
  for (const auto& k : msg.keys) out.insert(out.end(), k.begin(), k.end());
  out.insert(out.end(), blockhash.begin(), blockhash.end());
  append(out, shortvec(static_cast<std::uint16_t>(instructions.size())));
  for (const auto& ins : instructions) {
    out.push_back(index(ins.program));
    append(out, shortvec(static_cast<std::uint16_t>(ins.accounts.size())));
    for (const auto& a : ins.accounts) out.push_back(index(a.key));
    append(out, shortvec(static_cast<std::uint16_t>(ins.data.size())));
    append(out, ins.data);
  }
  return msg;
}

Bytes transaction_bytes(const std::array<std::uint8_t, 64>& signature, const Bytes& message) {
  Bytes out = shortvec(1);
  out.insert(out.end(), signature.begin(), signature.end());
  append(out, message);
  return out;
}

Result<std::uint64_t> token_amount(MicroUsdc amount, std::uint8_t decimals) {
  if (amount <= 0) return Error::make(ErrorCode::invalid_field, "a transfer's amount must be above zero", "amount");
  if (decimals > 18) return Error::make(ErrorCode::invalid_field, "a mint has at most 18 decimals", "decimals");
  unsigned __int128 units = static_cast<unsigned __int128>(amount);
  if (decimals >= 6) {
    for (int i = 6; i < decimals; ++i) units *= 10;
  } else {
    unsigned __int128 div = 1;
    for (int i = decimals; i < 6; ++i) div *= 10;
    if (units % div != 0) {
      return Error::make(ErrorCode::invalid_field, "the amount cannot be written with the mint's decimals", "amount");
    }
    units /= div;
  }
  if (units > UINT64_MAX) return Error::make(ErrorCode::invalid_field, "the amount does not fit a token transfer", "amount");
  return static_cast<std::uint64_t>(units);
}

Result<Message> payout_message(const PayoutTransfer& t, Sha256 sha256) {
  if (t.memo.empty() || t.memo.size() > 64) {
    return Error::make(ErrorCode::invalid_field, "a payout's memo is its id: 1 to 64 bytes", "memo");
  }
  if (t.amount == 0) return Error::make(ErrorCode::invalid_field, "a payout's amount must be above zero", "amount");
  const Key source = associated_token_address(t.hot_wallet, t.mint, sha256);
  const Key destination = associated_token_address(t.destination_wallet, t.mint, sha256);
  std::vector<Instruction> instructions{set_compute_unit_limit(t.compute_unit_limit)};
  if (t.compute_unit_price > 0) instructions.push_back(set_compute_unit_price(t.compute_unit_price));
  instructions.push_back(
      create_associated_token_account_idempotent(t.hot_wallet, destination, t.destination_wallet, t.mint));
  instructions.push_back(transfer_checked(source, t.mint, destination, t.hot_wallet, t.amount, t.decimals));
  instructions.push_back(memo(t.memo));
  Message m = compile_message(t.hot_wallet, instructions, t.blockhash);
  if (m.bytes.size() + 1 + 64 > kMaxTransactionBytes) {
    return Error::make(ErrorCode::invalid_field, "the transaction would exceed 1232 bytes", "memo");
  }
  return m;
}

}  // namespace gpunex::core::solana
