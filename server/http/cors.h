// Cross-origin requests (CORS) for browser apps that call the HTTP API directly: off unless --cors_allowed_origins
// names origins ("https://app.example.com", or "*" for any). A browser's preflight (OPTIONS with Origin and
// Access-Control-Request-Method) is answered here, before any key check, with what may be sent (methods GET, POST,
// DELETE; the headers it asks for, Authorization among them) for 10 minutes; a preflight from another origin gets
// 403. Every other answer to an allowed origin says so (Access-Control-Allow-Origin) and lets the page read our
// headers (x-request-id, x-arach-variant, Retry-After, x-ratelimit-*). A request from an origin not allowed is
// served as any request is: the browser keeps its answer from the page. No cookies are involved (keys travel in
// Authorization), so credentials are never allowed.
#pragma once

#include <httplib.h>

#include <string>
#include <vector>


namespace arach::server::http {

class CorsPolicy {
 public:
  // `origins` as HttpOptions::cors_allowed_origins (checked with the flags); empty: CORS off.
  explicit CorsPolicy(std::vector<std::string> origins);

  bool enabled() const { return any_origin_ || !origins_.empty(); }
  // Adds the CORS headers to `response` where `request` comes from an allowed origin; answers a preflight (true:
  // `response` is the whole answer).
  bool Apply(const httplib::Request& request, httplib::Response& response) const;

 private:
  bool Allows(const std::string& origin) const;

  bool any_origin_ = false;
  std::vector<std::string> origins_;  // exact, compared without case
};

}  // namespace arach::server::http
