// Reading the board's DPU from `xdputil query` (core/src/exec/vart/dpu_query.hpp), on the
// output format the kria role reads too (playbooks/roles/kria/README.md, sources there).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dpushard/base/error.hpp"
#include "exec/vart/dpu_query.hpp"

namespace dpushard::vart_detail {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& text) {
  try {
    parse_xdputil_query(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(XdputilQuery, ReadsTheFingerprintOfTheCores) {
  // A log line before the JSON, as xdputil may print; two cores of one DPU design.
  const std::string text = R"json(I20231203 glog line
{
  "DPU IP Spec": {"DPU Core Count": 2},
  "VAI Version": {"libvart-runner.so": "Xilinx vart-runner Version: 3.0.0"},
  "kernels": [
    {"DPU Arch": "DPUCZDX8G_ISA1_B4096", "DPU Frequency (MHz)": 300,
     "fingerprint": "0x101000016010407", "name": "DPU Core 0"},
    {"DPU Arch": "DPUCZDX8G_ISA1_B4096", "DPU Frequency (MHz)": 300,
     "fingerprint": "0x101000016010407", "name": "DPU Core 1"}
  ]
})json";
  EXPECT_EQ(parse_xdputil_query(text), (DeviceInfo{0x101000016010407, 0}));  // batch unknown
  EXPECT_EQ(parse_xdputil_query(R"({"kernels": [{"fingerprint": "0x1", "DPU Batch": 6}]})"),
            (DeviceInfo{1, 6}));
}

TEST(XdputilQuery, SaysWhatIsMissing) {
  EXPECT_EQ(error_of("command not found"), "xdputil query: no JSON in its output");
  EXPECT_EQ(error_of("{not json"), "xdputil query: its output is not JSON");
  EXPECT_THAT(error_of(R"({"kernels": []})"), HasSubstr("no DPU core listed"));
  EXPECT_EQ(error_of(R"({"kernels": [{"name": "x"}]})"),
            "xdputil query: a DPU core without a fingerprint");
  EXPECT_THAT(error_of(R"({"kernels": [{"fingerprint": "0xzz"}]})"),
              HasSubstr("'0xzz' is not a DPU fingerprint"));
  EXPECT_EQ(error_of(R"({"kernels": [{"fingerprint": "0x1"}, {"fingerprint": "0x2"}]})"),
            "xdputil query: DPU cores with different fingerprints (0x1, 0x2)");
}

TEST(XdputilQuery, FingerprintsReadAndPrintAsXdputilDoes) {
  EXPECT_EQ(parse_fingerprint("0x101000016010407", "x"), 0x101000016010407u);
  EXPECT_EQ(fingerprint_text(0x101000016010407), "0x101000016010407");
  EXPECT_EQ(fingerprint_text(0), "none");
  EXPECT_EQ(parse_fingerprint("255", "x"), 255u);
  EXPECT_THROW(parse_fingerprint("0x", "x"), Error);
  EXPECT_THROW(parse_fingerprint("0x10000000000000000", "x"), Error);  // 17 digits
  EXPECT_THROW(parse_fingerprint("-1", "x"), Error);
  EXPECT_THROW(parse_fingerprint("", "x"), Error);
}

}  // namespace
}  // namespace dpushard::vart_detail
