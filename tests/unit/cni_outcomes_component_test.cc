// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Node-mode mizarmp-addons' view of the plugin's outcome log (addons/cni_outcomes.h): the counts
// a registry holds after the component read a log of good and bad lines, and that history from
// before the component existed is not counted.
#include "addons/cni_outcomes.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <fstream>
#include <map>
#include <string>

#include "common/cni_outcome_log.h"
#include "tests/support/support.h"

namespace mizarmp::addons {
namespace {

using testing::TempDir;

// "name{label=value,...}" -> value of each counter sample, and "name_count{...}" of histograms.
std::map<std::string, double> Samples(prometheus::Registry& registry) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::string labels;
      for (const prometheus::ClientMetric::Label& l : metric.label) {
        labels += (labels.empty() ? "" : ",") + l.name + "=" + l.value;
      }
      if (family.type == prometheus::MetricType::Counter) {
        out[family.name + "{" + labels + "}"] = metric.counter.value;
      } else if (family.type == prometheus::MetricType::Histogram) {
        out[family.name + "_count{" + labels + "}"] =
            static_cast<double>(metric.histogram.sample_count);
        out[family.name + "_sum{" + labels + "}"] = metric.histogram.sample_sum;
      }
    }
  }
  return out;
}

class CniOutcomesComponentTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string path_ = CniOutcomeLogPath(dir_.path());
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
};

TEST_F(CniOutcomesComponentTest, GoodLinesAreCountedByCommandAndCodeAndBadOnesApart) {
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 999}).ok());  // before the server: history
  CniOutcomesComponent component(path_);
  component.RegisterMetrics(registry_);

  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 2000}).ok());
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 4000}).ok());
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 11, 1000000}).ok());
  ASSERT_TRUE(AppendCniOutcome(path_, {"DEL", 0, 500}).ok());
  {
    std::ofstream hostile(path_, std::ios::app | std::ios::binary);
    hostile << "not a line\n" << std::string(100000, '\0') << "\n1 ADD    0";  // cut short
  }
  component.ReadNow();

  auto s = Samples(*registry_);
  EXPECT_EQ(s["mizarmp_cni_commands_total{command=ADD,result=success}"], 2);
  EXPECT_EQ(s["mizarmp_cni_commands_total{command=ADD,result=error}"], 1);
  EXPECT_EQ(s["mizarmp_cni_commands_total{command=DEL,result=success}"], 1);
  EXPECT_EQ(s.count("mizarmp_cni_commands_total{command=GC,result=error}"), 1u)
      << "every command and result is a series from the start";
  EXPECT_EQ(s["mizarmp_cni_command_errors_total{code=11,command=ADD}"], 1);
  EXPECT_EQ(s["mizarmp_cni_command_duration_seconds_count{command=ADD}"], 3);
  EXPECT_DOUBLE_EQ(s["mizarmp_cni_command_duration_seconds_sum{command=ADD}"], 1.006);
  EXPECT_EQ(s["mizarmp_cni_outcome_log_bad_lines_total{}"], 2);

  // The cut-short line, once its newline comes, is one bad line; a good one after it counts.
  {
    std::ofstream rest(path_, std::ios::app | std::ios::binary);
    rest << "\n";
  }
  ASSERT_TRUE(AppendCniOutcome(path_, {"GC", 0, 10}).ok());
  component.ReadNow();
  s = Samples(*registry_);
  EXPECT_EQ(s["mizarmp_cni_commands_total{command=GC,result=success}"], 1);
  EXPECT_EQ(s["mizarmp_cni_outcome_log_bad_lines_total{}"], 3);
}

}  // namespace
}  // namespace mizarmp::addons
