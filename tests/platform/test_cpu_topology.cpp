// CPU topology from fake sysfs trees: big cores = the ones with the highest max frequency; the
// default thread count = the cores not in the slowest cluster (issue 37: 1+3+4 -> 4, 2+6 -> 2,
// 4+4 -> 4, one cluster -> all).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "platform/cpu_topology.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(CpuTopology, ParsesCpuLists) {
  EXPECT_EQ(parse_cpu_list("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("0,2-3,7\n"), (std::vector<int>{0, 2, 3, 7}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_TRUE(parse_cpu_list("3-1").empty());
  EXPECT_TRUE(parse_cpu_list("a-b").empty());
  EXPECT_TRUE(parse_cpu_list("0-99999999").empty());
  EXPECT_TRUE(parse_cpu_list("1,,2").empty());
}

TEST(CpuTopology, BigLittlePhone) {
  // 4 little (1.8 GHz), 3 mid (2.4 GHz), 1 prime (3.2 GHz) plus one offline core.
  const fs::path root = fs::path(test::temp_dir()) / "sys_phone";
  write(root / "online", "0-7\n");
  const int freqs[] = {1800000, 1800000, 1800000, 1800000, 2400000, 2400000, 2400000, 3200000};
  for (int i = 0; i < 8; ++i) {
    write(root / ("cpu" + std::to_string(i)) / "cpufreq" / "cpuinfo_max_freq", std::to_string(freqs[i]) + "\n");
  }
  const CpuTopology t = detect_cpu_topology(root.string());
  EXPECT_EQ(t.online.size(), 8u);
  EXPECT_EQ(t.big_cores, (std::vector<int>{7}));
  EXPECT_EQ(t.fast_cores, (std::vector<int>{4, 5, 6, 7}));  // 1 prime + 3 mid: 4 threads
  EXPECT_EQ(t.max_freq_khz[0], 1800000);
}

// Clusters written in sysfs order (cores of a cluster need not be contiguous ids).
CpuTopology topology_of(const std::string& name, const std::vector<int>& freqs) {
  const fs::path root = fs::path(test::temp_dir()) / name;
  write(root / "online", "0-" + std::to_string(freqs.size() - 1));
  for (size_t i = 0; i < freqs.size(); ++i) {
    write(root / ("cpu" + std::to_string(i)) / "cpufreq" / "cpuinfo_max_freq", std::to_string(freqs[i]));
  }
  return detect_cpu_topology(root.string());
}

TEST(CpuTopology, DefaultThreadsSkipOnlyTheSlowestCluster) {
  // 2 big + 6 little (e.g. a Dimensity 700-class SoC): the two big cores.
  EXPECT_EQ(topology_of("sys_2_6", {2000000, 2000000, 2000000, 2000000, 2000000, 2000000, 2200000, 2200000}).fast_cores,
            (std::vector<int>{6, 7}));
  // 4 + 4: the four fast ones.
  EXPECT_EQ(topology_of("sys_4_4", {1800000, 1800000, 1800000, 1800000, 2600000, 2600000, 2600000, 2600000}).n_fast(), 4);
  // 1 + 3 + 4 with the prime core first and the clusters interleaved by id.
  EXPECT_EQ(topology_of("sys_1_3_4", {3100000, 1800000, 2400000, 1800000, 2400000, 1800000, 2400000, 1800000}).fast_cores,
            (std::vector<int>{0, 2, 4, 6}));
  // One cluster: every core.
  EXPECT_EQ(topology_of("sys_uniform", {2500000, 2500000, 2500000, 2500000}).n_fast(), 4);
}

TEST(CpuTopology, TwoBigCoresAndOfflineCpu) {
  const fs::path root = fs::path(test::temp_dir()) / "sys_two";
  write(root / "online", "0-2,4");
  write(root / "cpu0/cpufreq/cpuinfo_max_freq", "2000000");
  write(root / "cpu1/cpufreq/cpuinfo_max_freq", "2000000");
  write(root / "cpu2/cpufreq/cpuinfo_max_freq", "2800000");
  write(root / "cpu3/cpufreq/cpuinfo_max_freq", "9999999");  // offline: ignored
  write(root / "cpu4/cpufreq/cpuinfo_max_freq", "2800000");
  const CpuTopology t = detect_cpu_topology(root.string());
  EXPECT_EQ(t.online, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(t.big_cores, (std::vector<int>{2, 4}));
  EXPECT_EQ(t.fast_cores, (std::vector<int>{2, 4}));
}

TEST(CpuTopology, NoFrequenciesMeansAllOnlineAreBig) {
  const fs::path root = fs::path(test::temp_dir()) / "sys_vm";
  write(root / "online", "0-3");
  write(root / "cpu1/cpufreq/cpuinfo_max_freq", "garbage");
  const CpuTopology t = detect_cpu_topology(root.string());
  EXPECT_EQ(t.big_cores, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.fast_cores, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CpuTopology, MissingSysfsFallsBackToHardwareConcurrency) {
  const CpuTopology t = detect_cpu_topology((fs::path(test::temp_dir()) / "does_not_exist").string());
  EXPECT_GE(t.n_big(), 1);
  EXPECT_EQ(t.big_cores.size(), t.online.size());
  EXPECT_EQ(t.fast_cores.size(), t.online.size());
  EXPECT_GE(default_thread_count(), 1);
}

}  // namespace
}  // namespace edgellm
