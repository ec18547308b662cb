#include "dispatch/spot_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/wire_rows.h"

namespace tenzro::dispatch {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool Agree(double d, double tol) { return d <= tol; }  // NaN: false

}  // namespace

double DefaultSpotTolerance(RowType wire) {
  switch (wire) {
    case RowType::kF32: return 1e-3;
    case RowType::kBf16: return 2e-2;
    case RowType::kF16: return 5e-3;
    case RowType::kQ8_0: return 5e-2;
  }
  return 1e-3;
}

bool SpotCheckSelected(uint64_t seed, uint64_t request_id, std::string_view node_id, int layer, int expert,
                       double fraction) {
  if (!(fraction > 0)) return false;
  if (fraction >= 1) return true;
  uint64_t h = SplitMix(seed ^ 0x5370'6f74'4368'6b21ull);  // "SpotChk!"
  h = SplitMix(h ^ request_id);
  for (unsigned char c : node_id) h = SplitMix(h ^ c);
  h = SplitMix(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(layer)) << 32 | static_cast<uint32_t>(expert)));
  const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
  return u < fraction;
}

double SpotRelL2(std::span<const float> a, std::span<const float> b) {
  double diff = 0, na = 0, nb = 0;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  const double denom = std::sqrt(std::max(na, nb));
  if (denom == 0) return 0;
  return std::sqrt(diff) / denom;
}

void RoundRows(std::span<float> rows, RowType wire) { runtime::RoundWireRows(wire, rows.data(), rows.size()); }

std::string_view SpotOutcomeName(SpotOutcome o) {
  switch (o) {
    case SpotOutcome::kAgree: return "agree";
    case SpotOutcome::kMismatch: return "mismatch";
    case SpotOutcome::kInconclusive: return "inconclusive";
    case SpotOutcome::kSkipped: return "skipped";
  }
  return "?";
}

SpotVerdict DecideSpotCheck(double holder_vs_verifier, bool verifier_is_local,
                            const std::optional<ThirdOpinion>& third, double tolerance) {
  SpotVerdict v;
  if (Agree(holder_vs_verifier, tolerance)) return v;  // agree
  if (verifier_is_local) {
    v.outcome = SpotOutcome::kMismatch;
    v.holder_wrong = true;
    return v;
  }
  v.outcome = SpotOutcome::kInconclusive;
  if (!third) return v;
  const bool holder_ok = Agree(third->holder_vs_third, tolerance);
  const bool verifier_ok = Agree(third->verifier_vs_third, tolerance);
  if (third->third_is_local) {
    // This node's answer is the truth: whoever differs from it is wrong
    // (both may be); if both are within tolerance of it, it cannot tell.
    v.holder_wrong = !holder_ok;
    v.verifier_wrong = !verifier_ok;
  } else {
    // Two against one: the odd one out is wrong; anything else is a draw.
    v.holder_wrong = verifier_ok && !holder_ok;
    v.verifier_wrong = holder_ok && !verifier_ok;
  }
  if (v.holder_wrong || v.verifier_wrong) v.outcome = SpotOutcome::kMismatch;
  return v;
}

}  // namespace tenzro::dispatch
