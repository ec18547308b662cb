// The exec frame: golden bytes, round trips in every row type, and hostile
// input (truncation at every byte, flips in the header, lying counts,
// limits, non-finite rows) that must fail cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/file.h"
#include "dispatch/exec_frame.h"
#include "quant/fp16.h"
#include "testutil/testutil.h"

namespace tenzro::dispatch {
namespace {

ExecRequest Sample(RowType t = RowType::kF32, uint32_t d_model = 8) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ExecRequest r;
  r.request_id = 0x0102030405060708ull;
  r.model = "tiny-qwen35moe";
  r.layer = 1;
  r.d_model = d_model;
  r.dtype = t;
  r.deadline_ms = 2500;
  for (int e : {5, 0, 7}) {
    ExecBatch& b = r.experts.emplace_back();
    b.expert = e;
    b.n_rows = static_cast<uint32_t>(e % 3 + 1);
    b.rows.resize(b.n_rows * d_model);
    for (float& v : b.rows) v = nd(rng);
  }
  return r;
}

ExecResponse SampleResponse(RowType t = RowType::kF32) {
  ExecResponse r;
  r.request_id = 42;
  r.layer = 3;
  r.d_model = 4;
  r.dtype = t;
  r.compute_us = 1234;
  ExecResult& a = r.experts.emplace_back();
  a.expert = 9;
  a.n_rows = 2;
  a.rows = {1, -2, 3.5f, 4, 0.25f, 6, -7, 8};
  ExecResult& b = r.experts.emplace_back();
  b.expert = 11;
  b.n_rows = 1;
  b.error = Error::NotFound("this holder does not hold expert m/3/11");
  return r;
}

TEST(ExecFrameTest, GoldenRequestBytes) {
  ExecRequest r;
  r.request_id = 1;
  r.model = "m";
  r.layer = 2;
  r.d_model = 1;
  r.deadline_ms = 100;
  r.experts.push_back({3, 1, {1.0f}});
  const Bytes b = EncodeExecRequest(r);
  const Bytes want = {'T', 'Z', 'X', 'Q', 1, 0,  // magic, version 1
                      0, 0,                      // dtype f32, flags
                      1, 0, 0, 0, 0, 0, 0, 0,    // request_id
                      2, 0, 0, 0,                // layer
                      1, 0, 0, 0,                // d_model
                      100, 0, 0, 0,              // deadline_ms
                      1, 0, 'm',                 // model
                      1, 0, 0, 0,                // n_experts
                      3, 0, 0, 0, 1, 0, 0, 0,    // expert 3, 1 row
                      0, 0, 0x80, 0x3f};         // 1.0f
  EXPECT_EQ(b, want);
  auto d = DecodeExecRequest(b);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->experts[0].rows[0], 1.0f);
}

TEST(ExecFrameTest, GoldenResponseBytes) {
  ExecResponse r;
  r.request_id = 1;
  r.layer = 2;
  r.d_model = 1;
  r.compute_us = 5;
  r.experts.push_back({3, 1, std::nullopt, {2.0f}});
  r.experts.push_back({4, 1, Error::NotFound("no"), {}});
  const Bytes want = {'T', 'Z', 'X', 'R', 1, 0, 0, 0,      // magic, version, f32, status ok
                      1, 0, 0, 0, 0, 0, 0, 0,              // request_id
                      2, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0,  // layer, d_model, compute_us
                      2, 0, 0, 0,                          // n_experts
                      3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,     // expert 3, 1 row, ok, no message
                      4, 0, 0, 0, 1, 0, 0, 0, 2, 2, 0, 'n', 'o',  // expert 4, not_found "no"
                      0, 0, 0, 0x40};                      // 2.0f
  EXPECT_EQ(EncodeExecResponse(r), want);
}

TEST(ExecFrameTest, RequestRoundTripF32IsExact) {
  const ExecRequest r = Sample();
  auto d = DecodeExecRequest(EncodeExecRequest(r));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->request_id, r.request_id);
  EXPECT_EQ(d->model, r.model);
  EXPECT_EQ(d->layer, r.layer);
  EXPECT_EQ(d->d_model, r.d_model);
  EXPECT_EQ(d->deadline_ms, r.deadline_ms);
  ASSERT_EQ(d->experts.size(), r.experts.size());
  for (size_t i = 0; i < r.experts.size(); ++i) {
    EXPECT_EQ(d->experts[i].expert, r.experts[i].expert);
    EXPECT_EQ(d->experts[i].n_rows, r.experts[i].n_rows);
    EXPECT_EQ(d->experts[i].rows, r.experts[i].rows);
  }
  EXPECT_TRUE(CheckExecRequest(r));
}

TEST(ExecFrameTest, HalfPrecisionRowsRoundLikeGgml) {
  for (RowType t : {RowType::kBf16, RowType::kF16}) {
    const ExecRequest r = Sample(t);
    const Bytes b = EncodeExecRequest(r);
    EXPECT_EQ(b.size(), EncodeExecRequest(Sample(RowType::kF32)).size() - (3 + 1 + 2) * 8 * 2);  // 6 rows x 8 x 2 bytes
    auto d = DecodeExecRequest(b);
    ASSERT_TRUE(d) << d.error().ToString();
    EXPECT_EQ(d->dtype, t);
    for (size_t i = 0; i < r.experts.size(); ++i)
      for (size_t j = 0; j < r.experts[i].rows.size(); ++j) {
        const float v = r.experts[i].rows[j];
        const float want = t == RowType::kBf16 ? quant::Bf16ToFp32(quant::Fp32ToBf16(v))
                                               : quant::Fp16ToFp32(quant::Fp32ToFp16(v));
        EXPECT_EQ(d->experts[i].rows[j], want);
      }
  }
}

TEST(ExecFrameTest, ResponseRoundTripWithPerExpertAndWholeErrors) {
  for (RowType t : {RowType::kF32, RowType::kBf16, RowType::kF16}) {
    const ExecResponse r = SampleResponse(t);
    auto d = DecodeExecResponse(EncodeExecResponse(r));
    ASSERT_TRUE(d) << d.error().ToString();
    EXPECT_EQ(d->request_id, 42u);
    EXPECT_EQ(d->compute_us, 1234u);
    ASSERT_EQ(d->experts.size(), 2u);
    EXPECT_EQ(d->experts[0].rows, r.experts[0].rows);  // exactly representable in all three
    ASSERT_TRUE(d->experts[1].error.has_value());
    EXPECT_EQ(d->experts[1].error->code(), ErrorCode::kNotFound);
    EXPECT_EQ(d->experts[1].error->message(), r.experts[1].error->message());
    EXPECT_TRUE(d->experts[1].rows.empty());
  }
  ExecResponse whole = ErrorExecResponse(9, Error::InvalidArgument("d_model 3 does not match"));
  auto d = DecodeExecResponse(EncodeExecResponse(whole));
  ASSERT_TRUE(d) << d.error().ToString();
  ASSERT_TRUE(d->error.has_value());
  EXPECT_EQ(d->error->code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(d->error->message(), "d_model 3 does not match");
  EXPECT_TRUE(d->experts.empty());
}

TEST(ExecFrameTest, LongErrorMessagesAreCut) {
  ExecResponse r = ErrorExecResponse(1, Error::Internal("{}", std::string(10000, 'x')));
  auto d = DecodeExecResponse(EncodeExecResponse(r));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->error->message().size(), kMaxErrorMessageBytes);
}

TEST(ExecFrameTest, EveryTruncationFailsCleanly) {
  const Bytes req = EncodeExecRequest(Sample());
  for (size_t n = 0; n < req.size(); ++n) {
    auto d = DecodeExecRequest(ByteSpan(req).subspan(0, n));
    ASSERT_FALSE(d) << "prefix of " << n << " bytes decoded";
  }
  const Bytes resp = EncodeExecResponse(SampleResponse());
  for (size_t n = 0; n < resp.size(); ++n) ASSERT_FALSE(DecodeExecResponse(ByteSpan(resp).subspan(0, n))) << n;
  Bytes longer = req;
  longer.push_back(0);
  auto t = DecodeExecRequest(longer);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code(), ErrorCode::kCorruption);
  Bytes rlonger = resp;
  rlonger.push_back(0);
  EXPECT_FALSE(DecodeExecResponse(rlonger));
}

TEST(ExecFrameTest, HeaderFlipsNeverCrash) {
  const Bytes req = EncodeExecRequest(Sample());
  const Bytes resp = EncodeExecResponse(SampleResponse());
  int rejected = 0;
  for (size_t i = 0; i < 80 && i < req.size(); ++i)
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      Bytes b = req;
      b[i] ^= x;
      auto d = DecodeExecRequest(b);
      if (!d) ++rejected;
      Bytes c = resp;
      if (i < c.size()) {
        c[i] ^= x;
        (void)DecodeExecResponse(c);
      }
    }
  EXPECT_GT(rejected, 100);
}

TEST(ExecFrameTest, SpecificRejections) {
  const Bytes good = EncodeExecRequest(Sample());
  auto code_of = [](const Bytes& b, const ExecLimits& l = {}) {
    auto d = DecodeExecRequest(b, l);
    return d ? ErrorCode::kInternal : d.error().code();
  };
  Bytes b = good;
  b[0] = 'X';
  EXPECT_EQ(code_of(b), ErrorCode::kCorruption);
  b = good;
  b[4] = 2;  // version 2
  EXPECT_EQ(code_of(b), ErrorCode::kUnsupported);
  b = good;
  b[6] = 3;  // dtype 3
  EXPECT_EQ(code_of(b), ErrorCode::kUnsupported);
  b = good;
  b[7] = 1;  // flags
  EXPECT_EQ(code_of(b), ErrorCode::kCorruption);
  b = good;
  b[20] = b[21] = b[22] = b[23] = 0;  // d_model 0
  EXPECT_EQ(code_of(b), ErrorCode::kCorruption);
  b = good;
  b[28] = 0;  // model length 0 (the id bytes then misparse as the count)
  EXPECT_NE(code_of(b), ErrorCode::kInternal);
  // n_experts lies: huge, then just one more than present.
  const size_t n_at = 30 + Sample().model.size();
  b = good;
  b[n_at + 3] = 0x7f;
  EXPECT_EQ(code_of(b), ErrorCode::kResourceExhausted);
  b = good;
  b[n_at] = 4;
  EXPECT_NE(code_of(b), ErrorCode::kInternal);
  // A row count that overflows the bytes present.
  b = good;
  b[n_at + 4 + 4 + 3] = 0x10;  // first expert's n_rows += 2^28
  EXPECT_NE(code_of(b), ErrorCode::kInternal);
  // Limits.
  ExecLimits few;
  few.max_rows = 2;
  EXPECT_EQ(code_of(good, few), ErrorCode::kResourceExhausted);
  few = {};
  few.max_experts = 2;
  EXPECT_EQ(code_of(good, few), ErrorCode::kResourceExhausted);
  few = {};
  few.max_frame_bytes = good.size() - 1;
  EXPECT_EQ(code_of(good, few), ErrorCode::kResourceExhausted);
  few = {};
  few.max_d_model = 4;
  EXPECT_EQ(code_of(good, few), ErrorCode::kResourceExhausted);
}

// An entry must ask for work: a zero-row entry would still make a holder
// load and pin the expert (500 such requests once caused 4,000 cache
// promotions and demotions), and a repeated expert runs twice.
TEST(ExecFrameTest, EmptyAndRepeatedEntriesAreRefusedBeforeAnyWork) {
  for (bool repeat : {false, true}) {
    ExecRequest r = Sample(RowType::kF32, 4);
    if (repeat) {
      r.experts[1].expert = r.experts[0].expert;
    } else {
      r.experts[1].n_rows = 0;
      r.experts[1].rows.clear();
    }
    auto checked = CheckExecRequest(r, {});
    ASSERT_FALSE(checked);
    EXPECT_EQ(checked.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(checked.error().message().find(repeat ? "more than once" : "no rows"), std::string::npos)
        << checked.error().ToString();
    auto decoded = DecodeExecRequest(EncodeExecRequest(r));
    ASSERT_FALSE(decoded);
    EXPECT_EQ(decoded.error().code(), ErrorCode::kInvalidArgument) << decoded.error().ToString();
  }
}

TEST(ExecFrameTest, NonFiniteRowsAreRefusedNamingTheRow) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    ExecRequest r = Sample();
    r.experts[2].rows[8 + 3] = bad;  // expert 7, row 1, column 3
    auto d = DecodeExecRequest(EncodeExecRequest(r));
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(d.error().message().find("expert 7 row 1 column 3"), std::string::npos) << d.error().message();
    EXPECT_FALSE(CheckExecRequest(r));
    ExecLimits lax;
    lax.reject_non_finite = false;
    EXPECT_TRUE(DecodeExecRequest(EncodeExecRequest(r), lax));
  }
  // f16 overflow turns a large finite value into Inf on the wire: refused too.
  ExecRequest r = Sample(RowType::kF16);
  r.experts[0].rows[0] = 1e6f;
  EXPECT_FALSE(DecodeExecRequest(EncodeExecRequest(r)));
}

TEST(ExecFrameTest, ResponseRejections) {
  const Bytes good = EncodeExecResponse(SampleResponse());
  Bytes b = good;
  b[7] = 200;  // unknown whole status
  EXPECT_FALSE(DecodeExecResponse(b));
  // The first entry (ok) carrying a message.
  b = good;
  const size_t entry0 = 32;
  b[entry0 + 9] = 1;
  EXPECT_FALSE(DecodeExecResponse(b));
  // Unknown per-expert status.
  b = good;
  b[entry0 + 8] = 99;
  EXPECT_FALSE(DecodeExecResponse(b));
}

// The seed corpus of tests/fuzz/exec_frame_fuzz.cc: these encoder outputs.
// TENZRO_WRITE_FUZZ_SEEDS=1 regenerates them.
TEST(ExecFrameTest, FuzzSeedsAreCurrent) {
  const std::string dir = testing::DataPath("../fuzz/corpus/exec_frame_fuzz");
  const bool write = std::getenv("TENZRO_WRITE_FUZZ_SEEDS") != nullptr;
  ExecRequest small = Sample(RowType::kF32, 4);
  const std::vector<std::pair<std::string, Bytes>> seeds = {
      {"request_f32", EncodeExecRequest(small)},
      {"request_bf16", EncodeExecRequest(Sample(RowType::kBf16, 4))},
      {"request_f16", EncodeExecRequest(Sample(RowType::kF16, 4))},
      {"response", EncodeExecResponse(SampleResponse())},
      {"response_error", EncodeExecResponse(ErrorExecResponse(3, Error::NotFound("no such model")))}};
  for (const auto& [name, bytes] : seeds) {
    const std::string path = dir + "/" + name;
    if (write) {
      ASSERT_TRUE(MakeDirs(dir));
      ASSERT_TRUE(WriteFileAtomic(path, ByteSpan(bytes)));
    }
    ASSERT_TRUE(PathExists(path)) << path << " missing: run with TENZRO_WRITE_FUZZ_SEEDS=1";
    EXPECT_EQ(testing::ReadAll(path), bytes) << path << " is stale: run with TENZRO_WRITE_FUZZ_SEEDS=1";
  }
}

TEST(ExecFrameTest, RowTypeNames) {
  for (RowType t : {RowType::kF32, RowType::kBf16, RowType::kF16}) EXPECT_EQ(*ParseRowType(RowTypeName(t)), t);
  EXPECT_FALSE(ParseRowType("fp8"));
}

}  // namespace
}  // namespace tenzro::dispatch
