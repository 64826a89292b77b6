// The HTTPS listener's certificate chain, private key and (for mutual TLS) client CA, read from their PEM files
// at start and again by Reload() (SIGHUP): every TLS handshake takes the ones read last, so a rotated
// certificate applies to new connections without a restart and without dropping those that are open. A
// reload that fails (a missing file, a key that does not match) keeps the ones in use.
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "server/server_options.h"

namespace arach::server::http {

class HttpsCertificates {
 public:
  static absl::StatusOr<std::unique_ptr<HttpsCertificates>> Load(const TlsOptions& options);
  ~HttpsCertificates();

  // Reads the files again.
  absl::Status Reload();
  // Prepares `ctx` (httplib::SSLServer's setup callback): TLS 1.2 or later, and a certificate callback that
  // gives each handshake the current certificate, key and client-certificate check. This object must outlive
  // the server.
  bool Configure(SSL_CTX& ctx);

 private:
  struct Material;
  explicit HttpsCertificates(TlsOptions options) : options_(std::move(options)) {}
  static int OnHandshake(SSL* ssl, void* self);
  std::shared_ptr<const Material> Current() const;

  const TlsOptions options_;
  mutable std::mutex mutex_;  // guards current_ (swapped whole on reload)
  std::shared_ptr<const Material> current_;
};

}  // namespace arach::server::http
