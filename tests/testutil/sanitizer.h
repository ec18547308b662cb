// Whether this test binary runs under AddressSanitizer (scripts/sanitize),
// for bounds that ASan itself moves: freed memory waits in a quarantine of up
// to 256 MiB (plus the allocator's per-thread caches) before it is reused, so
// a process's RSS also carries memory it already let go of, and I/O code
// built at -O0 runs several times slower. The unsanitized run holds the real
// bounds.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TENZRO_TESTING_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENZRO_TESTING_ASAN 1
#endif
#endif

namespace tenzro::testing {

#ifdef TENZRO_TESTING_ASAN
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
inline constexpr double kAsanQuarantineMiB = kAsan ? 256 : 0;

}  // namespace tenzro::testing
