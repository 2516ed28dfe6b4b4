#pragma once
// Internal to http/: the Boost.Beast request type behind http::Server and its conversion to Request,
// and a Response as the bytes the server writes. Beast stays inside http/'s .cpp files: include this
// only from there.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/optional.hpp>

#include "core/result.hpp"
#include "server/http/http.hpp"

namespace gpunex::http::detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;

inline constexpr std::uint32_t header_limit = 16 * 1024;

// A request body: kept in a string (under ServerOptions::body_limit), or only counted and discarded as it
// streams in (ServerOptions::body_plan), so a large upload never sits in memory.
struct RequestBody {
  struct value_type {
    std::string bytes;
    std::uint64_t length = 0;
    bool keep = true;
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      ec = {};
      if (!body_.keep || !length) return;
      if (*length > body_.bytes.max_size()) {
        ec = bhttp::error::buffer_overflow;
        return;
      }
      body_.bytes.reserve(static_cast<std::size_t>(*length));
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      const std::size_t n = net::buffer_size(buffers);
      body_.length += n;
      if (!body_.keep) return n;
      const std::size_t old = body_.bytes.size();
      if (n > body_.bytes.max_size() - old) {
        ec = bhttp::error::buffer_overflow;
        return 0;
      }
      body_.bytes.resize(old + n);
      net::buffer_copy(net::buffer(body_.bytes.data() + old, n), buffers);
      return n;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

// A response as it goes on the wire: its header block is written here rather than by Beast's
// serializer, whose field list (an allocation per field) and chained buffer views cost more per small
// answer than the rest of the write (perf under bench/http.sh); then the body, without a copy.
struct WireResponse {
  unsigned status = 200;
  unsigned version = 11;
  //! "Name: value\r\n" lines, without Content-Length and Connection (header_block adds them).
  std::string fields;
  //! The body: bytes it owns, or a view into memory a shared owner keeps alive (Response::shared_body).
  std::string owned;
  std::shared_ptr<const void> owner;
  std::string_view shared;
  //! Content-Length (the GET's for a HEAD); none for 1xx, 204 and 304, which carry no body.
  std::optional<std::uint64_t> content_length;
  bool keep_alive = true;
  bool send_body = true;  // false for a HEAD

  std::string_view body() const { return owner ? shared : std::string_view(owned); }
  //! The status line, the fields, Content-Length, Connection as keep_alive and the version need it,
  //! and the blank line.
  std::string header_block() const;
};

using BeastRequest = bhttp::request<RequestBody>;

//! A client's request id is kept only when it is short and plain.
bool valid_request_id(std::string_view id);
//! A fresh request id: 16 hex digits.
std::string new_request_id();

//! An error answer that closes the connection.
WireResponse make_error(unsigned version, core::ErrorCode code, std::string message);
//! A Beast request header as a Request (method, target, path, query, headers; no body).
core::Result<Request> request_from_header(const bhttp::request_header<>& msg);
//! Turns a parsed Beast message into a Request (the header's parts and the body).
core::Result<Request> request_from_message(BeastRequest&& msg);
//! A handler's Response as the answer to write: headers that would smuggle in a line are dropped,
//! X-Request-Id is added unless the handler set one, 1xx/204/304 carry no body, and a HEAD's answer
//! (`head`) has the GET's Content-Length and no body. Throws std::invalid_argument for a status that
//! is not three digits (the handler's bug: answered 500).
WireResponse to_wire(Response r, unsigned version, const std::string& request_id, bool keep_alive, bool head);

}  // namespace gpunex::http::detail
