// arach-cli ab --prometheus URL: the fleet's A/B as a Prometheus that scrapes every replica sees it, read
// from the recording rules of deploy/prometheus/recording-rules.yml (the dashboard's series): per variant,
// traffic share and requests/s, TTFT / TPOT / end-to-end quantiles (from the sum of all replicas' histogram
// buckets), output tokens/s, mean generated log-prob, attention on the sink; per variant pair, the paired
// shadow's mean log-prob difference and top-1 agreement. Windows are the rules' (5 minutes).
#pragma once

#include "absl/status/statusor.h"
#include "client/cli/options.h"
#include "nlohmann/json.hpp"

namespace arach::client {

// Queries `options.prometheus` (http://HOST:PORT) and returns the report (also printed as a table).
absl::StatusOr<nlohmann::json> ReportFleetAb(const AbOptions& options);

}  // namespace arach::client
