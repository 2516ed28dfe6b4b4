#include "core/rental_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

namespace gpunex::core::rental {

namespace {

// Docker's reference grammar (github.com/distribution/reference, regexp.go), without IPv6 hosts.
const std::regex& image_regex() {
  static const std::regex re(
      R"(^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?)"
      R"([a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)"
      R"((?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?)"
      R"((?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$)");
  return re;
}

bool has_control(std::string_view s, bool allow_newline) {
  for (unsigned char c : s) {
    if (c == 0) return true;
    if (c < 0x20 && !(allow_newline && (c == '\n' || c == '\t'))) return true;
  }
  return false;
}

}  // namespace

bool valid_image_reference(std::string_view ref) {
  if (ref.empty() || ref.size() > 512) return false;
  if (!std::regex_match(ref.begin(), ref.end(), image_regex())) return false;
  // The first component is a registry only when it has a '.' or a ':' or is localhost (Docker's rule);
  // otherwise it is a repository path, which is lower case ("UPPER/app" is refused by every engine).
  const auto slash = ref.find('/');
  if (slash == std::string_view::npos) return true;
  const auto first = ref.substr(0, slash);
  if (first.find_first_of(".:") != std::string_view::npos || first == "localhost") return true;
  return std::none_of(first.begin(), first.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
}

std::optional<std::int64_t> max_duration_ms(const Spec& s) {
  if (!s.max_hours) return std::nullopt;
  return static_cast<std::int64_t>(*s.max_hours * 3'600'000.0);
}

bool reserved_env_name(std::string_view name) {
  return name.starts_with("NVIDIA_") || name.starts_with("GPUNEX_");
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (unsigned char c : name) {
    if (!(std::isalnum(c) || c == '_')) return false;
  }
  return true;
}

Spec read_spec(ObjectReader& r) {
  Spec s;
  s.image = r.required_line("image", 1, 512);
  if (!r.failed("image") && !valid_image_reference(s.image)) {
    r.invalid("image", "must be an image reference such as docker.io/library/ubuntu:22.04 or ghcr.io/org/app@sha256:…",
              "invalid_image");
  }
  r.describe_field(
      "command",
      {{"type", "array"}, {"maxItems", kMaxCommandItems}, {"items", {{"type", "string"}, {"maxLength", 4096}}}});
  if (const auto* cmd = r.optional_value("command"); cmd != nullptr) {
    if (!cmd->is_array() || cmd->size() > kMaxCommandItems) {
      r.invalid("command", "must be a list of at most " + std::to_string(kMaxCommandItems) + " strings");
    } else {
      for (const auto& item : *cmd) {
        if (!item.is_string() || item.get<std::string>().size() > 4096 || has_control(item.get<std::string>(), true)) {
          r.invalid("command", "must hold strings of at most 4096 characters without NUL");
          break;
        }
        s.command.push_back(item.get<std::string>());
      }
    }
  }
  r.describe_field("env", {{"type", "object"},
                           {"maxProperties", kMaxEnv},
                           {"propertyNames", {{"pattern", "^[A-Za-z_][A-Za-z0-9_]{0,255}$"}}},
                           {"additionalProperties", {{"type", "string"}, {"maxLength", 32768}}}});
  if (const auto* env = r.optional_value("env"); env != nullptr) {
    if (!env->is_object() || env->size() > kMaxEnv) {
      r.invalid("env", "must be an object of at most " + std::to_string(kMaxEnv) + " NAME: \"value\" pairs");
    } else {
      for (const auto& [name, value] : env->items()) {
        if (name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
          r.invalid("env", "names must not contain '=' or NUL (\"" + name.substr(0, name.find('\0')) + "\")",
                    "invalid_env_name");
          break;
        }
        if (!valid_env_name(name)) {
          r.invalid("env", "names must be letters, digits and '_', not starting with a digit (\"" + name + "\")",
                    "invalid_env_name");
          break;
        }
        if (reserved_env_name(name)) {
          r.invalid("env",
                    "must not set " + name +
                        ": NVIDIA_* and GPUNEX_* are the platform's (it hands the container exactly its GPUs)",
                    "reserved_env_name");
          break;
        }
        if (!value.is_string() || value.get<std::string>().size() > 32768 ||
            value.get<std::string>().find('\0') != std::string::npos) {
          r.invalid("env", "value of " + name + " must be a string of at most 32 KiB without NUL");
          break;
        }
        s.env[name] = value.get<std::string>();
      }
      if (!r.failed("env") && s.env.count(kSshKeyEnv) > 0) {
        r.invalid("env", std::string("must not set ") + kSshKeyEnv + ": give the key as ssh_public_key");
      }
    }
  }
  r.describe_field("ports", {{"type", "array"},
                             {"maxItems", kMaxPorts},
                             {"uniqueItems", true},
                             {"items", {{"type", "integer"}, {"minimum", 1}, {"maximum", 65535}}}});
  if (const auto* ports = r.optional_value("ports"); ports != nullptr) {
    std::set<int> seen;
    if (!ports->is_array() || ports->size() > kMaxPorts) {
      r.invalid("ports", "must be a list of at most " + std::to_string(kMaxPorts) + " container ports");
    } else {
      for (const auto& p : *ports) {
        if (!p.is_number_integer() || p.get<std::int64_t>() < 1 || p.get<std::int64_t>() > 65535) {
          r.invalid("ports", "must hold port numbers from 1 to 65535", "port_out_of_range");
          break;
        }
        if (!seen.insert(p.get<int>()).second) {
          r.invalid("ports", "lists port " + std::to_string(p.get<int>()) + " twice");
          break;
        }
        s.ports.push_back(p.get<int>());
      }
    }
  }
  r.describe_field("max_hours", {{"type", "number"}, {"minimum", kMinHours}, {"maximum", kMaxHours}});
  if (const auto* h = r.optional_value("max_hours"); h != nullptr) {
    // A hair under 1/60 still passes: "0.0167" and 1/60 written out to any number of digits are one minute.
    if (!h->is_number() || !std::isfinite(h->get<double>()) || h->get<double>() < kMinHours - 1e-9 ||
        h->get<double>() > kMaxHours) {
      r.invalid("max_hours", "must be a number of hours from one minute (0.0167) to " +
                                 std::to_string(static_cast<int>(kMaxHours)) + " (90 days)");
    } else {
      s.max_hours = h->get<double>();
    }
  }
  auto key = r.optional_string("ssh_public_key", 8192);
  r.describe_field("ssh_public_key", {{"description", "One line of an OpenSSH public key (ssh-ed25519 AAAA...)."}});
  if (key) {
    const bool known = key->rfind("ssh-", 0) == 0 || key->rfind("ecdsa-", 0) == 0 || key->rfind("sk-", 0) == 0;
    if (has_control(*key, false) || !known) {
      r.invalid("ssh_public_key", "must be one line of an OpenSSH public key (ssh-ed25519 AAAA… or ssh-rsa AAAA…)");
    } else {
      s.ssh_public_key = std::move(*key);
    }
  }
  return s;
}

void open_ssh_port(Spec& s, ObjectReader& r) {
  if (!s.ssh_public_key || std::find(s.ports.begin(), s.ports.end(), kSshPort) != s.ports.end()) return;
  if (s.ports.size() >= kMaxPorts) {
    r.invalid("ports",
              "with an SSH key, port 22 is opened too: list at most " + std::to_string(kMaxPorts - 1) + " other ports");
    return;
  }
  s.ports.push_back(kSshPort);
}

std::map<std::string, std::string> container_env(const Spec& s) {
  auto env = s.env;
  if (s.ssh_public_key) env[kSshKeyEnv] = *s.ssh_public_key;
  return env;
}

nlohmann::json spec_to_json(const Spec& s) {
  nlohmann::json j = {{"image", s.image}, {"command", s.command}, {"env", s.env}, {"ports", s.ports}};
  if (s.max_hours) j["max_hours"] = *s.max_hours;
  if (s.ssh_public_key) j["ssh_public_key"] = *s.ssh_public_key;
  return j;
}

Result<Spec> spec_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error::make(ErrorCode::invalid_field, "a rental spec must be a JSON object", "spec");
  ObjectReader r(j, "spec");
  Spec s = read_spec(r);
  if (auto st = r.finish(); !st) return std::move(st).error();
  return s;
}

}  // namespace gpunex::core::rental
