// ContainerRuntime over the Docker Engine API on a unix socket (Docker, or Podman's compatible
// service), with libcurl through util::HttpClient. The messages are built and read in docker_api.cpp.

#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/runtime/container_runtime.hpp"
#include "agent/runtime/docker_api.hpp"
#include "util/http_client.hpp"

namespace gpunex::agent::runtime {

namespace {

using core::Error;
using core::ErrorCode;
using util::url_encode;

constexpr std::string_view kDefaultHost = "unix:///var/run/docker.sock";

// The engine's own message from an error answer ({"message": "..."}), else the status.
std::string engine_message(const util::HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) return j["message"].get<std::string>();
  return "HTTP " + std::to_string(r.status);
}

class DockerRuntime final : public ContainerRuntime {
 public:
  explicit DockerRuntime(std::string socket) : socket_(std::move(socket)) {}

  std::string describe() const override {
    std::lock_guard lock(mu_);
    return "unix://" + socket_ + (version_.empty() ? "" : ", Docker API " + version_);
  }

  core::Status ensure_image(const std::string& image,
                            const std::function<void(const PullProgress&)>& progress) override {
    auto present = call(Speed::quick, "GET", "/images/" + url_encode(image) + "/json");
    if (!present) return std::move(present).error();
    if (present->status == 200) return core::ok_status();
    const auto [from, tag] = docker::split_image(image);
    std::string path = "/images/create?fromImage=" + url_encode(from);
    if (!tag.empty()) path += "&tag=" + url_encode(tag);
    auto pulled = call(Speed::slow, "POST", path);
    if (!pulled) return std::move(pulled).error();
    if (pulled->status != 200) {
      return Error::make(ErrorCode::unavailable, "pulling " + image + " failed: " + engine_message(*pulled));
    }
    auto steps = docker::parse_pull_stream(pulled->body);
    if (!steps) return std::move(steps).error();
    if (progress) {
      for (const auto& p : *steps) progress(p);
    }
    // An engine may answer 200 and still not have the image (a pull that found nothing to pull).
    auto after = call(Speed::quick, "GET", "/images/" + url_encode(image) + "/json");
    if (!after) return std::move(after).error();
    if (after->status != 200) return Error::make(ErrorCode::unavailable, "image " + image + " is not available");
    return core::ok_status();
  }

  core::Result<std::string> create(const ContainerSpec& spec) override {
    const auto network = docker::network_name(spec.rental_id);
    auto net = call(Speed::quick, "POST", "/networks/create", docker::network_body(spec.rental_id).dump());
    if (!net) return std::move(net).error();
    if (net->status != 201 && net->status != 200 && net->status != 409) {
      return Error::make(ErrorCode::unavailable, "creating network " + network + ": " + engine_message(*net));
    }
    auto made =
        call(Speed::quick, "POST", "/containers/create?name=" + url_encode(docker::container_name(spec.rental_id)),
             docker::create_body(spec).dump());
    if (!made) return std::move(made).error();
    if (made->status != 201) {
      return Error::make(ErrorCode::unavailable, "creating the container: " + engine_message(*made));
    }
    auto j = nlohmann::json::parse(made->body, nullptr, false);
    if (!j.is_object() || !j.contains("Id")) {
      return Error::make(ErrorCode::unavailable, "creating the container: the engine gave no id");
    }
    return j["Id"].get<std::string>();
  }

  core::Status start(const std::string& id) override {
    auto r = call(Speed::quick, "POST", "/containers/" + id + "/start");
    if (!r) return std::move(r).error();
    if (r->status != 204 && r->status != 304) {
      return Error::make(ErrorCode::unavailable, "starting the container: " + engine_message(*r));
    }
    return core::ok_status();
  }

  core::Result<ContainerState> inspect(const std::string& id) override {
    auto r = call(Speed::quick, "GET", "/containers/" + id + "/json");
    if (!r) return std::move(r).error();
    if (r->status == 404) {
      ContainerState gone;
      gone.id = id;
      gone.status = ContainerState::Status::missing;
      return gone;
    }
    if (r->status != 200) return Error::make(ErrorCode::unavailable, "inspecting the container: " + engine_message(*r));
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object()) return Error::make(ErrorCode::unavailable, "inspecting the container: not JSON");
    return docker::parse_inspect(j);
  }

  core::Result<std::string> logs(const std::string& id, int tail_lines) override {
    auto r = call(Speed::quick, "GET",
                  "/containers/" + id + "/logs?stdout=1&stderr=1&tail=" + std::to_string(std::max(tail_lines, 1)));
    if (!r) return std::move(r).error();
    if (r->status != 200) return Error::make(ErrorCode::unavailable, "reading the logs: " + engine_message(*r));
    return docker::demux_logs(r->body);
  }

  core::Status stop_and_remove(const std::string& id, std::chrono::seconds grace) override {
    std::string rental;
    if (auto seen = call(Speed::quick, "GET", "/containers/" + id + "/json"); seen && seen->status == 200) {
      auto j = nlohmann::json::parse(seen->body, nullptr, false);
      if (j.is_object()) rental = docker::parse_inspect(j).rental_id;
    }
    if (auto stopped = stop(id, grace); !stopped) return stopped;
    auto removed = call(Speed::quick, "DELETE", "/containers/" + id + "?force=1&v=1");
    if (!removed) return std::move(removed).error();
    if (removed->status != 204 && removed->status != 200 && removed->status != 404) {
      return Error::make(ErrorCode::unavailable, "removing the container: " + engine_message(*removed));
    }
    if (!rental.empty()) return remove_network(rental);
    return core::ok_status();
  }

  core::Status stop(const std::string& id, std::chrono::seconds grace) override {
    // The engine sends SIGTERM, waits `t` seconds, then SIGKILL.
    auto stopped = call(Speed::slow, "POST", "/containers/" + id + "/stop?t=" + std::to_string(grace.count()));
    if (!stopped) return std::move(stopped).error();
    if (stopped->status != 204 && stopped->status != 304 && stopped->status != 404) {
      return Error::make(ErrorCode::unavailable, "stopping the container: " + engine_message(*stopped));
    }
    return core::ok_status();
  }

  core::Result<RentalNetwork> network(const std::string& rental_id) override {
    const auto name = docker::network_name(rental_id);
    auto r = call(Speed::quick, "GET", "/networks/" + url_encode(name));
    if (!r) return std::move(r).error();
    if (r->status != 200)
      return Error::make(ErrorCode::unavailable, "inspecting network " + name + ": " + engine_message(*r));
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object()) return Error::make(ErrorCode::unavailable, "inspecting network " + name + ": not JSON");
    return docker::parse_network(j);
  }

  core::Status remove_network(const std::string& rental_id) override {
    auto net = call(Speed::quick, "DELETE", "/networks/" + url_encode(docker::network_name(rental_id)));
    if (!net) return std::move(net).error();
    if (net->status != 204 && net->status != 200 && net->status != 404) {
      return Error::make(ErrorCode::unavailable, "removing the network: " + engine_message(*net));
    }
    return core::ok_status();
  }

  core::Result<std::vector<ContainerState>> list_rental_containers() override {
    const std::string filters = nlohmann::json{{"label", {std::string(kRentalLabel)}}}.dump();
    auto r = call(Speed::quick, "GET", "/containers/json?all=1&filters=" + url_encode(filters));
    if (!r) return std::move(r).error();
    if (r->status != 200) return Error::make(ErrorCode::unavailable, "listing containers: " + engine_message(*r));
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    std::vector<ContainerState> out;
    if (!j.is_array()) return out;
    for (const auto& item : j) {
      auto s = docker::parse_list_item(item);
      if (!s.rental_id.empty()) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  enum class Speed { quick, slow };  // an answer in seconds, or a pull or a stop's grace period

  // Sends a request under the negotiated version (asking the engine first, once), on a client of
  // its own: a curl handle serves one request at a time, so each call borrows an idle one.
  core::Result<util::HttpResponse> call(Speed speed, const std::string& method, const std::string& path,
                                        const std::optional<std::string>& body = std::nullopt) {
    auto version = negotiated_version();
    if (!version) return std::move(version).error();
    auto client = borrow(speed);
    auto r = client->request(method, "/v" + *version + path, body);
    give_back(speed, std::move(client));
    return r;
  }

  core::Result<std::string> negotiated_version() {
    std::lock_guard lock(mu_);
    if (!version_.empty()) return version_;
    util::HttpClient probe("http://docker", options(Speed::quick));
    auto v = probe.request("GET", "/version");
    if (!v) {
      return Error::make(ErrorCode::unavailable,
                         "no container engine answers at unix://" + socket_ + " (" + v.error().message + ")");
    }
    auto j = nlohmann::json::parse(v->body, nullptr, false);
    if (v->status != 200 || !j.is_object() || !j.contains("ApiVersion") || !j["ApiVersion"].is_string()) {
      return Error::make(ErrorCode::unavailable, "unix://" + socket_ + " does not answer as a Docker Engine API");
    }
    auto agreed = docker::negotiate_version(j["ApiVersion"].get<std::string>());
    if (!agreed) return std::move(agreed).error();
    version_ = *agreed;
    return version_;
  }

  util::HttpClientOptions options(Speed speed) const {
    return {speed == Speed::quick ? std::chrono::milliseconds(30'000) : std::chrono::milliseconds(3'600'000), "", true,
            socket_};
  }

  std::unique_ptr<util::HttpClient> borrow(Speed speed) {
    {
      std::lock_guard lock(mu_);
      auto& idle = idle_[static_cast<int>(speed)];
      if (!idle.empty()) {
        auto c = std::move(idle.back());
        idle.pop_back();
        return c;
      }
    }
    return std::make_unique<util::HttpClient>("http://docker", options(speed));
  }

  void give_back(Speed speed, std::unique_ptr<util::HttpClient> client) {
    std::lock_guard lock(mu_);
    auto& idle = idle_[static_cast<int>(speed)];
    if (idle.size() < kMaxIdleClients) idle.push_back(std::move(client));
  }

  static constexpr std::size_t kMaxIdleClients = 4;
  std::string socket_;
  mutable std::mutex mu_;  // guards version_ and idle_
  std::vector<std::unique_ptr<util::HttpClient>> idle_[2];
  std::string version_;
};

}  // namespace

std::string docker_host_from_env() {
  const char* env = std::getenv("DOCKER_HOST");
  if (env != nullptr && std::string_view(env).rfind("unix://", 0) == 0) return env;
  return std::string(kDefaultHost);
}

std::string docker_socket_path(const std::string& docker_host) {
  return docker_host.rfind("unix://", 0) == 0 ? docker_host.substr(7) : docker_host;
}

std::unique_ptr<ContainerRuntime> make_docker_runtime(const std::string& docker_host) {
  return std::make_unique<DockerRuntime>(docker_socket_path(docker_host));
}

}  // namespace gpunex::agent::runtime
