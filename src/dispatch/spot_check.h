// tenzro dispatch: spot checks — catching a holder that returns wrong expert
// outputs (docs/security.md, docs/dispatch.md).
//
// A holder is a stranger's machine: nothing in the exec frame proves that the
// rows it answered are FFN_expert(x). The distributed forward (forward.h)
// therefore re-runs a seeded random fraction of the remote (holder, expert)
// results on another replica — this node's own runtime when it holds the
// expert, else the planner's best other holder — and compares the two
// answers by relative L2 distance. Who is wrong when they disagree
// (DecideSpotCheck):
//   * this node's own result is trusted: a remote that disagrees with it is
//     wrong;
//   * two remotes that disagree need a third opinion (another replica, or
//     this node): whichever of the two disagrees with it is wrong; without a
//     third, or when the third agrees with neither or both, nobody is
//     banned and the check is "inconclusive".
// A holder found wrong is banned for SpotCheckOptions::ban, its rows are
// replaced by the verified ones and every other expert it answered in the
// same forward is recomputed elsewhere, so the forward's output stays right.
//
// Tolerances: the kernels are deterministic, so two honest holders with the
// same inputs agree to float noise (different SIMD paths: ~1e-6). Rows on
// the wire in bf16/f16 are rounded (inputs are rounded the same way for a
// local re-run, see RoundRows), so the outputs differ by the output rounding
// (bf16: 2^-9 relative per value, f16: 2^-12, q8_0: half a step of
// amax/127 per block of 32; measured against a local re-run: bf16 ~1.7e-3,
// q8_0 ~6.3e-3 relative L2) — DefaultSpotTolerance covers
// that with a margin; a lie worth telling is far above it.
//
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "dispatch/exec_frame.h"

namespace tenzro::dispatch {

struct SpotCheckOptions {
  // Share of remote (holder, expert) results re-run elsewhere, 0..1. 0 (the
  // library default) turns checks off; the node defaults to 0.05.
  double fraction = 0;
  // Relative L2 above which two answers disagree; 0 = DefaultSpotTolerance
  // of the forward's wire dtype.
  double tolerance = 0;
  // Seeds which results are checked (SpotCheckSelected). The node draws it
  // at random when it starts, so a holder cannot predict the checks.
  uint64_t seed = 0;
  std::chrono::milliseconds ban{600000};  // a holder caught lying sits out this long
};

// 1e-3 for f32 rows, 2e-2 for bf16, 5e-3 for f16.
double DefaultSpotTolerance(RowType wire);

// Whether the result of `expert` (of `layer`) from `node_id` in call
// `request_id` is checked: a hash of (seed, request_id, node_id, layer,
// expert) mapped to [0, 1) below `fraction`. fraction <= 0: never; >= 1:
// always.
bool SpotCheckSelected(uint64_t seed, uint64_t request_id, std::string_view node_id, int layer, int expert,
                       double fraction);

// ||a - b|| / max(||a||, ||b||) over float64 sums; 0 when both are zero;
// NaN or Inf in either gives +Inf (always a disagreement). REQUIRES: equal
// sizes.
double SpotRelL2(std::span<const float> a, std::span<const float> b);

// Rounds `rows` in place to what they are after a trip through `wire`
// (runtime::RoundWireRows; f32: unchanged), so a local re-run sees the
// holder's inputs. REQUIRES: q8_0 -> rows.size() a multiple of 32.
void RoundRows(std::span<float> rows, RowType wire);

enum class SpotOutcome : uint8_t { kAgree, kMismatch, kInconclusive, kSkipped };
// "agree" | "mismatch" | "inconclusive" | "skipped" (no other replica could
// re-run it, or the re-run failed).
std::string_view SpotOutcomeName(SpotOutcome o);

// A third answer for a disputed result.
struct ThirdOpinion {
  double holder_vs_third = 0;    // SpotRelL2(holder rows, third rows)
  double verifier_vs_third = 0;  // SpotRelL2(verifier rows, third rows)
  bool third_is_local = false;   // computed by this node: trusted
};

struct SpotVerdict {
  SpotOutcome outcome = SpotOutcome::kAgree;
  bool holder_wrong = false;    // ban the holder, use the verifier's (or third's) rows
  bool verifier_wrong = false;  // ban the verifier
};

// The decision described in the file comment. `holder_vs_verifier` is
// SpotRelL2 of the two answers; a distance is "agree" when <= tolerance
// (NaN never agrees). `third` is consulted only for a remote verifier.
SpotVerdict DecideSpotCheck(double holder_vs_verifier, bool verifier_is_local,
                            const std::optional<ThirdOpinion>& third, double tolerance);

}  // namespace tenzro::dispatch
