#include "server/http/https_certificates.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arach::server::http {

// What one reading of the files gave, owned (freed with it).
struct HttpsCertificates::Material {
  X509* certificate = nullptr;
  STACK_OF(X509)* chain = nullptr;  // the intermediates after the leaf
  EVP_PKEY* key = nullptr;
  X509_STORE* client_ca = nullptr;            // null: no client certificate is asked for
  STACK_OF(X509_NAME)* client_ca_names = nullptr;  // the CAs named in the certificate request

  ~Material() {
    X509_free(certificate);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    X509_STORE_free(client_ca);
    sk_X509_NAME_pop_free(client_ca_names, X509_NAME_free);
  }
};

namespace {

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no detail";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// Every certificate in a PEM file, in order.
absl::StatusOr<std::vector<X509*>> ReadCertificates(const std::string& path, const char* what) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat(what, " ", path, ": cannot be opened"));
  std::vector<X509*> certificates;
  while (X509* certificate = PEM_read_X509(file, nullptr, nullptr, nullptr)) certificates.push_back(certificate);
  std::fclose(file);
  ERR_clear_error();  // the read that ended the loop
  if (certificates.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": no PEM certificate in it"));
  return certificates;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpsCertificates>> HttpsCertificates::Load(const TlsOptions& options) {
  std::unique_ptr<HttpsCertificates> certificates(new HttpsCertificates(options));
  if (absl::Status status = certificates->Reload(); !status.ok()) return status;
  return certificates;
}

HttpsCertificates::~HttpsCertificates() = default;

absl::Status HttpsCertificates::Reload() {
  auto material = std::make_shared<Material>();
  absl::StatusOr<std::vector<X509*>> chain = ReadCertificates(options_.cert, "--http_tls_cert");
  if (!chain.ok()) return chain.status();
  material->certificate = (*chain)[0];
  material->chain = sk_X509_new_null();
  for (size_t i = 1; i < chain->size(); ++i) sk_X509_push(material->chain, (*chain)[i]);

  FILE* key_file = std::fopen(options_.key.c_str(), "r");
  if (key_file == nullptr) return absl::NotFoundError(absl::StrCat("--http_tls_key ", options_.key, ": cannot be opened"));
  material->key = PEM_read_PrivateKey(key_file, nullptr, nullptr, nullptr);
  std::fclose(key_file);
  if (material->key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--http_tls_key ", options_.key, ": not a PEM private key (", OpenSslError(), ")"));
  }
  if (X509_check_private_key(material->certificate, material->key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("--http_tls_key ", options_.key, " is not the key of --http_tls_cert ", options_.cert));
  }
  if (!options_.client_ca.empty()) {
    absl::StatusOr<std::vector<X509*>> cas = ReadCertificates(options_.client_ca, "--http_tls_client_ca");
    if (!cas.ok()) return cas.status();
    material->client_ca = X509_STORE_new();
    material->client_ca_names = sk_X509_NAME_new_null();
    for (X509* ca : *cas) {
      X509_STORE_add_cert(material->client_ca, ca);
      sk_X509_NAME_push(material->client_ca_names, X509_NAME_dup(X509_get_subject_name(ca)));
      X509_free(ca);  // the store holds its own reference
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = std::move(material);
  return absl::OkStatus();
}

std::shared_ptr<const HttpsCertificates::Material> HttpsCertificates::Current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

bool HttpsCertificates::Configure(SSL_CTX& ctx) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_cert_cb(&ctx, &HttpsCertificates::OnHandshake, this);
  return true;
}

int HttpsCertificates::OnHandshake(SSL* ssl, void* self) {
  const std::shared_ptr<const Material> material = static_cast<HttpsCertificates*>(self)->Current();
  if (SSL_use_certificate(ssl, material->certificate) != 1 || SSL_use_PrivateKey(ssl, material->key) != 1 ||
      SSL_set1_chain(ssl, material->chain) != 1) {
    return 0;  // the handshake fails
  }
  if (material->client_ca != nullptr) {
    SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    SSL_set1_verify_cert_store(ssl, material->client_ca);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_deep_copy(material->client_ca_names, X509_NAME_dup, X509_NAME_free);
    SSL_set_client_CA_list(ssl, names);  // takes ownership
  }
  return 1;
}

}  // namespace arach::server::http
