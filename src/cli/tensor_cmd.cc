// `tenzro tensor quantize|dequantize`: ggml-exact block codecs on raw files
// (docs/formats/quant-blocks.md). Inputs are memory-mapped and converted in
// chunks of rows on all cores; outputs are written atomically.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/file.h"
#include "quant/types.h"

namespace tenzro::cli {
namespace {

struct CodecArgs {
  std::string type;
  int64_t row_len = 0;
  int threads = 0;
  std::string in, out;
};

Result<const quant::TypeTraits*> ResolveType(const CodecArgs& a) {
  const quant::TypeTraits* t = quant::FindTraitsByName(a.type);
  if (!t) return Error::InvalidArgument("unknown tensor type '{}' (f32, f16, bf16, q8_0, q4_K, q5_K, q6_K, q4_0, mxfp4)", a.type);
  if (a.row_len <= 0) return Error::InvalidArgument("--row-len must be positive, got {}", a.row_len);
  TENZRO_TRY(uint64_t row_bytes, quant::RowBytes(t->type, a.row_len));
  (void)row_bytes;
  return t;
}

// Rows per chunk: about 8 MiB of f32 per chunk.
int64_t ChunkRows(int64_t row_len) { return std::max<int64_t>(1, (8 << 20) / (row_len * 4)); }

Result<void> Quantize(const CodecArgs& a) {
  TENZRO_TRY(const quant::TypeTraits* t, ResolveType(a));
  if (!t->from_float) return Error::Unsupported("tenzro cannot quantize to {} (dequantize only)", t->name);
  TENZRO_TRY(auto in, MappedFile::Open(a.in));
  const uint64_t in_row = static_cast<uint64_t>(a.row_len) * 4;
  if (in->size() % in_row != 0)
    return Error::InvalidArgument("{}: size {} is not a whole number of rows of {} f32 values ({} bytes)", a.in,
                                  in->size(), a.row_len, in_row);
  const int64_t n_rows = static_cast<int64_t>(in->size() / in_row);
  TENZRO_TRY(uint64_t row_bytes, quant::RowBytes(t->type, a.row_len));
  TENZRO_TRY(auto w, AtomicFileWriter::Create(a.out));
  const int64_t chunk = ChunkRows(a.row_len);
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(chunk, n_rows) * row_bytes));
  const auto* src = reinterpret_cast<const float*>(in->bytes().data());
  for (int64_t r = 0; r < n_rows; r += chunk) {
    const int64_t n = std::min(chunk, n_rows - r);
    TENZRO_CHECK_OK(quant::QuantizeRowsParallel(t->type, src + r * a.row_len, buf.data(), n, a.row_len, a.threads));
    TENZRO_CHECK_OK(w->Append(buf.data(), n * row_bytes));
  }
  return w->Commit();
}

Result<void> Dequantize(const CodecArgs& a) {
  TENZRO_TRY(const quant::TypeTraits* t, ResolveType(a));
  if (!t->to_float) return Error::Unsupported("tenzro cannot dequantize {}", t->name);
  TENZRO_TRY(auto in, MappedFile::Open(a.in));
  TENZRO_TRY(uint64_t row_bytes, quant::RowBytes(t->type, a.row_len));
  if (in->size() % row_bytes != 0)
    return Error::InvalidArgument("{}: size {} is not a whole number of {} rows of {} values ({} bytes)", a.in,
                                  in->size(), t->name, a.row_len, row_bytes);
  const int64_t n_rows = static_cast<int64_t>(in->size() / row_bytes);
  TENZRO_TRY(auto w, AtomicFileWriter::Create(a.out));
  const int64_t chunk = ChunkRows(a.row_len);
  std::vector<float> buf(static_cast<size_t>(std::min(chunk, n_rows) * a.row_len));
  const uint8_t* src = in->bytes().data();
  for (int64_t r = 0; r < n_rows; r += chunk) {
    const int64_t n = std::min(chunk, n_rows - r);
    TENZRO_CHECK_OK(quant::DequantizeRowsParallel(t->type, src + r * row_bytes, buf.data(), n, a.row_len, a.threads));
    TENZRO_CHECK_OK(w->Append(buf.data(), n * a.row_len * sizeof(float)));
  }
  return w->Commit();
}

void AddCodecOptions(CLI::App* cmd, CodecArgs& a, const char* in_what, const char* out_what) {
  cmd->add_option("--type", a.type, "ggml type name, case-insensitive: f32 f16 bf16 q8_0 q4_K q5_K q6_K (q4_0 mxfp4: dequantize only)")
      ->required();
  cmd->add_option("--row-len", a.row_len, "Values per row (a multiple of the type's block size)")->required();
  cmd->add_option("--threads", a.threads, "Worker threads (default: all hardware threads)");
  cmd->add_option("IN", a.in, in_what)->required();
  cmd->add_option("OUT", a.out, out_what)->required();
}

void RegisterTensor(CLI::App& root, Globals& g) {
  CLI::App* group = Group(root, "tensor");
  auto q = std::make_shared<CodecArgs>();
  CLI::App* quantize = group->add_subcommand("quantize", "Quantize raw little-endian f32 rows, byte-identical to ggml");
  AddCodecOptions(quantize, *q, "Input: raw f32 values, rows concatenated", "Output: the quantized rows");
  quantize->footer("Example: tenzro tensor quantize --type q4_K --row-len 4096 weights.f32 weights.q4_K");
  SetAction(quantize, g, [q] { return Quantize(*q); });

  auto d = std::make_shared<CodecArgs>();
  CLI::App* dequantize = group->add_subcommand("dequantize", "Dequantize rows to raw little-endian f32, bit-identical to ggml");
  AddCodecOptions(dequantize, *d, "Input: quantized rows, concatenated", "Output: raw f32 values");
  dequantize->footer("Example: tenzro tensor dequantize --type q6_K --row-len 4096 weights.q6_K weights.f32");
  SetAction(dequantize, g, [d] { return Dequantize(*d); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterTensor);

}  // namespace tenzro::cli
