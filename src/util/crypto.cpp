#include "util/crypto.hpp"

#include <sodium.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace gpunex::util {

void init_crypto() {
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialise");
}

double random_unit() {
  std::uint64_t r = 0;
  randombytes_buf(&r, sizeof r);
  return static_cast<double>(r >> 11) / static_cast<double>(std::uint64_t{1} << 53);
}

std::string random_token(std::size_t n_bytes) {
  std::vector<unsigned char> buf(n_bytes);
  randombytes_buf(buf.data(), buf.size());
  std::string out(sodium_base64_ENCODED_LEN(n_bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), buf.data(), buf.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.find('\0'));
  sodium_memzero(buf.data(), buf.size());
  return out;
}

std::string buffered_random_token(std::size_t n_bytes) {
  struct Pool {
    std::array<unsigned char, 4096> bytes{};
    std::size_t used = sizeof(bytes);
  };
  thread_local Pool pool;
  if (n_bytes > pool.bytes.size()) return random_token(n_bytes);
  if (pool.bytes.size() - pool.used < n_bytes) {
    randombytes_buf(pool.bytes.data(), pool.bytes.size());
    pool.used = 0;
  }
  const unsigned char* bytes = pool.bytes.data() + pool.used;
  std::string out(sodium_base64_ENCODED_LEN(n_bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes, n_bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.find('\0'));
  // Used once: wiped so that no later token repeats it.
  sodium_memzero(pool.bytes.data() + pool.used, n_bytes);
  pool.used += n_bytes;
  return out;
}

std::string new_id(std::string_view prefix) {
  std::array<unsigned char, 10> buf{};
  randombytes_buf(buf.data(), buf.size());
  std::string hex(buf.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), buf.data(), buf.size());
  hex.pop_back();
  return std::string(prefix) + "_" + hex;
}

namespace {

//! libsodium's SHA-256 rather than OpenSSL's SHA256(): OpenSSL 3 looks the digest up in its provider
//! table under a lock on every call (EVP_MD_fetch), which was most of the 2.4% of the server's CPU that
//! hashing an agent's API key took per heartbeat (bench/README.md, heartbeat path (7)).
std::array<unsigned char, crypto_hash_sha256_BYTES> sha256_digest(std::string_view data) {
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return digest;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  const auto digest = sha256_digest(data);
  std::string hex(digest.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  hex.pop_back();
  return hex;
}

std::string hash_password(std::string_view password) {
  std::array<char, crypto_pwhash_STRBYTES> out{};
  if (crypto_pwhash_str_alg(out.data(), password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                            crypto_pwhash_MEMLIMIT_INTERACTIVE, crypto_pwhash_ALG_ARGON2ID13) != 0) {
    throw std::runtime_error("out of memory while hashing a password");
  }
  return std::string(out.data());
}

bool verify_password(std::string_view password, const std::string& hash) {
  if (hash.size() >= crypto_pwhash_STRBYTES) return false;
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

namespace {

//! BLAKE2b of context, a NUL and data: domain-separated, so one secret gives unrelated values per context.
std::array<unsigned char, crypto_generichash_BYTES> context_hash(std::string_view context, std::string_view data) {
  std::array<unsigned char, crypto_generichash_BYTES> out{};
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, out.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(context.data()), context.size());
  const unsigned char nul = 0;
  crypto_generichash_update(&st, &nul, 1);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  crypto_generichash_final(&st, out.data(), out.size());
  return out;
}

std::string seal_context(std::string_view context) { return std::string(context) + " seal key"; }

}  // namespace

std::string secret_hash_hex(std::string_view context, std::string_view secret) {
  const auto digest = context_hash(std::string(context) + " name", secret);
  std::string hex(digest.size() * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), digest.data(), digest.size());
  hex.pop_back();
  return hex;
}

std::string seal(std::string_view context, std::string_view secret, std::string_view plaintext) {
  static_assert(crypto_generichash_BYTES == crypto_secretbox_KEYBYTES);
  auto key = context_hash(seal_context(context), secret);
  std::vector<unsigned char> box(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plaintext.size());
  randombytes_buf(box.data(), crypto_secretbox_NONCEBYTES);
  crypto_secretbox_easy(box.data() + crypto_secretbox_NONCEBYTES,
                        reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(), box.data(),
                        key.data());
  sodium_memzero(key.data(), key.size());
  std::string out(sodium_base64_ENCODED_LEN(box.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), box.data(), box.size(), sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.find('\0'));
  return out;
}

std::optional<std::string> unseal(std::string_view context, std::string_view secret, std::string_view sealed) {
  std::vector<unsigned char> box(sealed.size());
  std::size_t len = 0;
  if (sodium_base642bin(box.data(), box.size(), sealed.data(), sealed.size(), nullptr, &len, nullptr,
                        sodium_base64_VARIANT_ORIGINAL) != 0 ||
      len < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) {
    return std::nullopt;
  }
  auto key = context_hash(seal_context(context), secret);
  std::string out(len - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  const int rc = crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(out.data()),
                                            box.data() + crypto_secretbox_NONCEBYTES,
                                            len - crypto_secretbox_NONCEBYTES, box.data(), key.data());
  sodium_memzero(key.data(), key.size());
  if (rc != 0) return std::nullopt;
  return out;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  // Compare hashes so the time does not depend on where the inputs differ, nor on their lengths.
  const auto da = sha256_digest(a);
  const auto db = sha256_digest(b);
  return sodium_memcmp(da.data(), db.data(), da.size()) == 0;
}

std::string base64_encode(const std::vector<std::uint8_t>& bytes) {
  std::string out(sodium_base64_encoded_len(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes.data(), bytes.size(), sodium_base64_VARIANT_ORIGINAL);
  out.pop_back();  // the terminating NUL
  return out;
}

std::optional<std::vector<std::uint8_t>> base64_decode(std::string_view text) {
  std::vector<std::uint8_t> out(text.size());
  std::size_t len = 0;
  if (sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &len, nullptr,
                        sodium_base64_VARIANT_ORIGINAL) != 0) {
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

}  // namespace gpunex::util
