// The test-side reader of /metrics: labels (values with commas, quotes and braces), the served model's
// label kept apart, and malformed input refused.
#include "tests/testing/prometheus_text.h"

#include "gtest/gtest.h"

namespace arach::testing {
namespace {

TEST(PrometheusText, LabelsAreSortedAndTheModelLabelIsKeptApart) {
  auto parsed = ParsePrometheusText(
      "# HELP x_total Things.\n# TYPE x_total counter\n"
      "x_total{reason=\"saturated\",model=\"m1\"} 2\n"
      "x_total{b=\"q\",a=\"1,2 {3}\",model=\"m1\"} 3\n"
      "x_total{a=\"say \\\"hi\\\"\"} 4\n"
      "# TYPE y gauge\ny 5\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("x_total", "reason=\"saturated\""), 2);
  EXPECT_EQ(parsed->Value("x_total", "a=\"1,2 {3}\",b=\"q\""), 3);
  EXPECT_EQ(parsed->Value("x_total", "a=\"say \\\"hi\\\"\""), 4);
  EXPECT_EQ(parsed->Value("y"), 5);
  EXPECT_EQ(parsed->Sum("x_total"), 9);
  EXPECT_EQ(parsed->models, std::set<std::string>{"m1"});
  EXPECT_EQ(parsed->samples_without_model, 2);
}

TEST(PrometheusText, MalformedLinesAreRefused) {
  EXPECT_FALSE(ParsePrometheusText("x 1\n").ok()) << "no TYPE";
  EXPECT_FALSE(ParsePrometheusText("# TYPE x gauge\nx{a=\"1\"b=\"2\"} 1\n").ok()) << "no comma between labels";
  EXPECT_FALSE(ParsePrometheusText("# TYPE x gauge\nx{a=1} 1\n").ok()) << "unquoted value";
  EXPECT_FALSE(ParsePrometheusText("# TYPE x gauge\nx{model=\"a\",model=\"b\"} 1\n").ok()) << "two model labels";
}

}  // namespace
}  // namespace arach::testing
