#include "quant/types.h"

#include <cctype>
#include <iterator>

#include "quant/quantize_kernels.h"

namespace tenzro::quant {
namespace {

// The table. Kernels are installed on first use (TableBegin()) with the best
// variant this CPU runs (quantize_kernels.h); entries with null kernels are sizes-only.
TypeTraits kTraits[] = {
    {GgmlType::F32, "f32", 1, 4, false, nullptr, nullptr},
    {GgmlType::F16, "f16", 1, 2, false, nullptr, nullptr},
    {GgmlType::Q4_0, "q4_0", 32, 18, true, nullptr, nullptr},
    {GgmlType::Q4_1, "q4_1", 32, 20, true, nullptr, nullptr},
    {GgmlType::Q5_0, "q5_0", 32, 22, true, nullptr, nullptr},
    {GgmlType::Q5_1, "q5_1", 32, 24, true, nullptr, nullptr},
    {GgmlType::Q8_0, "q8_0", 32, 34, true, nullptr, nullptr},
    {GgmlType::Q8_1, "q8_1", 32, 36, true, nullptr, nullptr},
    {GgmlType::Q2_K, "q2_K", 256, 84, true, nullptr, nullptr},
    {GgmlType::Q3_K, "q3_K", 256, 110, true, nullptr, nullptr},
    {GgmlType::Q4_K, "q4_K", 256, 144, true, nullptr, nullptr},
    {GgmlType::Q5_K, "q5_K", 256, 176, true, nullptr, nullptr},
    {GgmlType::Q6_K, "q6_K", 256, 210, true, nullptr, nullptr},
    {GgmlType::Q8_K, "q8_K", 256, 292, true, nullptr, nullptr},
    {GgmlType::IQ2_XXS, "iq2_xxs", 256, 66, true, nullptr, nullptr},
    {GgmlType::IQ2_XS, "iq2_xs", 256, 74, true, nullptr, nullptr},
    {GgmlType::IQ3_XXS, "iq3_xxs", 256, 98, true, nullptr, nullptr},
    {GgmlType::IQ1_S, "iq1_s", 256, 50, true, nullptr, nullptr},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18, true, nullptr, nullptr},
    {GgmlType::IQ3_S, "iq3_s", 256, 110, true, nullptr, nullptr},
    {GgmlType::IQ2_S, "iq2_s", 256, 82, true, nullptr, nullptr},
    {GgmlType::IQ4_XS, "iq4_xs", 256, 136, true, nullptr, nullptr},
    {GgmlType::I8, "i8", 1, 1, false, nullptr, nullptr},
    {GgmlType::I16, "i16", 1, 2, false, nullptr, nullptr},
    {GgmlType::I32, "i32", 1, 4, false, nullptr, nullptr},
    {GgmlType::I64, "i64", 1, 8, false, nullptr, nullptr},
    {GgmlType::F64, "f64", 1, 8, false, nullptr, nullptr},
    {GgmlType::IQ1_M, "iq1_m", 256, 56, true, nullptr, nullptr},
    {GgmlType::BF16, "bf16", 1, 2, false, nullptr, nullptr},
    {GgmlType::TQ1_0, "tq1_0", 256, 54, true, nullptr, nullptr},
    {GgmlType::TQ2_0, "tq2_0", 256, 66, true, nullptr, nullptr},
    {GgmlType::MXFP4, "mxfp4", 32, 17, true, nullptr, nullptr},
};

const TypeTraits* TableBegin() {
  static const bool installed = [] {
    for (auto& t : kTraits) {
      const Codec c = GetCodec(t.type, BestIsa());
      t.to_float = c.to_float;
      t.from_float = c.from_float;
    }
    return true;
  }();
  (void)installed;
  return kTraits;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

const TypeTraits* FindTraits(GgmlType type) { return FindTraits(static_cast<uint32_t>(type)); }

const TypeTraits* FindTraits(uint32_t ggml_id) {
  const TypeTraits* table = TableBegin();
  for (size_t i = 0; i < std::size(kTraits); ++i)
    if (static_cast<uint32_t>(table[i].type) == ggml_id) return &table[i];
  return nullptr;
}

const TypeTraits* FindTraitsByName(std::string_view name) {
  const TypeTraits* table = TableBegin();
  for (size_t i = 0; i < std::size(kTraits); ++i)
    if (EqualsIgnoreCase(table[i].name, name)) return &table[i];
  return nullptr;
}

std::string_view TypeName(GgmlType type) {
  const TypeTraits* t = FindTraits(type);
  return t ? t->name : "?";
}

Result<uint64_t> RowBytes(GgmlType type, int64_t n_per_row) {
  const TypeTraits* t = FindTraits(type);
  if (!t) return Error::InvalidArgument("unknown ggml type id {}", static_cast<uint32_t>(type));
  if (n_per_row < 0) return Error::InvalidArgument("negative row length {}", n_per_row);
  if (n_per_row % t->block_elems != 0)
    return Error::InvalidArgument("row length {} is not a multiple of the {} block size {}", n_per_row, t->name,
                                  t->block_elems);
  uint64_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n_per_row / t->block_elems), t->block_bytes, &bytes))
    return Error::InvalidArgument("row of {} {} values overflows", n_per_row, t->name);
  return bytes;
}

}  // namespace tenzro::quant
