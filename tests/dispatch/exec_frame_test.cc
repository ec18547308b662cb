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
#include "quant/quantize_kernels.h"
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

// d_model 4: two rows {1, -2, 3.5, 4}, {0.25, 6, -7, 8}; larger d_model
// (q8_0 needs a multiple of 32): those 8 values then zeros.
ExecResponse SampleResponse(RowType t = RowType::kF32, uint32_t d_model = 4) {
  ExecResponse r;
  r.request_id = 42;
  r.layer = 3;
  r.d_model = d_model;
  r.dtype = t;
  r.compute_us = 1234;
  ExecResult& a = r.experts.emplace_back();
  a.expert = 9;
  a.n_rows = 2;
  a.rows.assign(2 * d_model, 0.0f);
  const float v[8] = {1, -2, 3.5f, 4, 0.25f, 6, -7, 8};
  for (int i = 0; i < 8; ++i) a.rows[(i / 4) * d_model + i % 4] = v[i];
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
  b[6] = 4;  // dtype 4
  EXPECT_EQ(code_of(b), ErrorCode::kUnsupported);
  b = good;
  b[6] = 3;  // q8_0 with d_model 8 (not a multiple of 32)
  EXPECT_EQ(code_of(b), ErrorCode::kInvalidArgument);
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
      {"response_error", EncodeExecResponse(ErrorExecResponse(3, Error::NotFound("no such model")))},
      {"request_q8_0", EncodeExecRequest(Sample(RowType::kQ8_0, 32))},
      {"response_q8_0", EncodeExecResponse(SampleResponse(RowType::kQ8_0, 32))}};
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
  for (RowType t : {RowType::kF32, RowType::kBf16, RowType::kF16, RowType::kQ8_0})
    EXPECT_EQ(*ParseRowType(RowTypeName(t)), t);
  EXPECT_EQ(RowTypeName(RowType::kQ8_0), "q8_0");
  EXPECT_FALSE(ParseRowType("fp8"));
  EXPECT_FALSE(ParseRowType("q8"));
}

// q8_0 golden bytes: d_model 32, one row [127, 0, ..., 0, -63.5]: amax 127,
// d = 1.0 (fp16 3C00), qs[0] = 127, qs[31] = round(-63.5) = -64 (C's
// roundf: half away from zero) = C0.
TEST(ExecFrameTest, GoldenQ8_0Rows) {
  ExecRequest r;
  r.request_id = 1;
  r.model = "m";
  r.d_model = 32;
  r.dtype = RowType::kQ8_0;
  ExecBatch& b = r.experts.emplace_back();
  b.expert = 3;
  b.n_rows = 1;
  b.rows.assign(32, 0.0f);
  b.rows[0] = 127;
  b.rows[31] = -63.5f;
  const Bytes f = EncodeExecRequest(r);
  const size_t rows_at = 30 + 1 + 4 + 8;
  ASSERT_EQ(f.size(), rows_at + 34);
  EXPECT_EQ(f[6], 3);  // dtype q8_0
  Bytes want(34, 0);
  want[0] = 0x00;
  want[1] = 0x3C;
  want[2] = 0x7F;
  want[33] = 0xC0;
  EXPECT_EQ(Bytes(f.begin() + rows_at, f.end()), want);
  auto d = DecodeExecRequest(f);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->experts[0].rows[0], 127.0f);
  EXPECT_EQ(d->experts[0].rows[31], -64.0f);
  EXPECT_EQ(d->experts[0].rows[5], 0.0f);
}

// q8_0 rows: 34 bytes per 32 values, the values exactly ggml's reference
// quantize + dequantize (quant's scalar reference kernels), each within
// about half a step of the input (ggml scales by 1/d but stores d in fp16:
// |q * fp16(d) - x| <= d / 2 + 127 * d * 2^-11 < 0.57 d); the same in answers.
TEST(ExecFrameTest, Q8_0RowsRoundLikeGgml) {
  const ExecRequest r = Sample(RowType::kQ8_0, 64);
  const Bytes b = EncodeExecRequest(r);
  EXPECT_EQ(b.size(), EncodeExecRequest(Sample(RowType::kF32, 64)).size() - 6 * 64 * 4 + 6 * 2 * 34);
  auto d = DecodeExecRequest(b);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->dtype, RowType::kQ8_0);
  for (size_t i = 0; i < r.experts.size(); ++i) {
    const std::vector<float>& x = r.experts[i].rows;
    std::vector<uint8_t> q(x.size() / 32 * 34);
    std::vector<float> want(x.size());
    quant::ref::QuantizeRowQ8_0(x.data(), q.data(), static_cast<int64_t>(x.size()));
    quant::ref::DequantizeRowQ8_0(q.data(), want.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(d->experts[i].rows, want) << "expert " << r.experts[i].expert;
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
      for (int j = 0; j < 32; ++j)
        EXPECT_LE(std::fabs(d->experts[i].rows[blk * 32 + j] - x[blk * 32 + j]), amax / 127 * 0.57f);
    }
  }
  const ExecResponse resp = SampleResponse(RowType::kQ8_0, 32);
  auto dr = DecodeExecResponse(EncodeExecResponse(resp));
  ASSERT_TRUE(dr) << dr.error().ToString();
  ASSERT_EQ(dr->experts[0].rows.size(), 64u);
  // Rows [1, -2, 3.5, 4, 0...], [0.25, 6, -7, 8, 0...]: d <= 8/127.
  for (int j = 0; j < 64; ++j) EXPECT_NEAR(dr->experts[0].rows[j], resp.experts[0].rows[j], 8.0f / 127 * 0.57f);
  EXPECT_TRUE(dr->experts[1].error.has_value());
  // Truncation at every byte of both frames fails cleanly.
  for (size_t n = 0; n < b.size(); ++n) ASSERT_FALSE(DecodeExecRequest(ByteSpan(b).subspan(0, n))) << n;
  const Bytes rb = EncodeExecResponse(resp);
  for (size_t n = 0; n < rb.size(); ++n) ASSERT_FALSE(DecodeExecResponse(ByteSpan(rb).subspan(0, n))) << n;
}

// q8_0 blocks never cross rows: d_model must be a multiple of 32, refused
// with kInvalidArgument naming it (no silent fallback to another dtype),
// in a request built in memory, a decoded request and a decoded answer.
TEST(ExecFrameTest, Q8_0NeedsDModelAMultipleOf32) {
  ExecRequest r = Sample(RowType::kQ8_0, 48);
  auto c = CheckExecRequest(r);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message().find("multiple of 32"), std::string::npos) << c.error().message();
  // A frame claiming q8_0 with d_model 48 (hand-built: f32 frame, dtype byte patched).
  Bytes b = EncodeExecRequest(Sample(RowType::kF32, 48));
  b[6] = 3;
  auto d = DecodeExecRequest(b);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(d.error().message().find("multiple of 32"), std::string::npos) << d.error().message();
  Bytes a = EncodeExecResponse(SampleResponse(RowType::kF32, 4));
  a[6] = 3;
  auto da = DecodeExecResponse(a);
  ASSERT_FALSE(da);
  EXPECT_EQ(da.error().code(), ErrorCode::kInvalidArgument);
}

// A q8_0 block whose fp16 scale is Inf or NaN would put non-finite values
// into the holder's (or the caller's) compute: refused as corruption in
// requests and answers, whatever reject_non_finite says.
TEST(ExecFrameTest, Q8_0NonFiniteScalesAreRefused) {
  const Bytes req = EncodeExecRequest(Sample(RowType::kQ8_0, 32));
  const size_t rows_at = req.size() - 6 * 34;
  ExecLimits lax;
  lax.reject_non_finite = false;
  for (uint16_t scale : {0x7C00, 0xFC00, 0x7E00, 0x7C01}) {  // +Inf, -Inf, NaN, signalling NaN
    for (size_t blk : {size_t{0}, size_t{5}}) {
      Bytes b = req;
      b[rows_at + blk * 34] = static_cast<uint8_t>(scale);
      b[rows_at + blk * 34 + 1] = static_cast<uint8_t>(scale >> 8);
      for (const ExecLimits& l : {ExecLimits{}, lax}) {
        auto d = DecodeExecRequest(b, l);
        ASSERT_FALSE(d) << scale << " block " << blk;
        EXPECT_EQ(d.error().code(), ErrorCode::kCorruption);
        EXPECT_NE(d.error().message().find("non-finite scale"), std::string::npos) << d.error().message();
      }
    }
  }
  Bytes resp = EncodeExecResponse(SampleResponse(RowType::kQ8_0, 32));
  resp[resp.size() - 34 + 1] = 0x7C;
  auto d = DecodeExecResponse(resp);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code(), ErrorCode::kCorruption);
  // A non-finite input row encodes to such a block: the request is refused.
  ExecRequest bad = Sample(RowType::kQ8_0, 32);
  bad.experts[0].rows[3] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(DecodeExecRequest(EncodeExecRequest(bad), lax));
}

}  // namespace
}  // namespace tenzro::dispatch
