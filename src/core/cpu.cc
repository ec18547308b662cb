#include "core/cpu.h"

#include <sched.h>

#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TENZRO_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define TENZRO_AARCH64_LINUX 1
// Bit values from the kernel's arch/arm64/include/uapi/asm/hwcap.h, for
// headers older than the feature.
#ifndef HWCAP_FPHP
#define HWCAP_FPHP (1UL << 9)
#endif
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1UL << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif
#endif

namespace tenzro {
namespace {

#ifdef TENZRO_X86
uint64_t ReadXcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

CpuFeatures Detect() {
  CpuFeatures f;
#ifdef TENZRO_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = ReadXcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;             // SSE + AVX state
  const bool zmm_state = ymm_state && (xcr0 & 0xe0) == 0xe0;  // opmask + ZMM_Hi256 + Hi16_ZMM
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;    // XTILECFG + XTILEDATA
  if (!ymm_state) return f;
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  if (zmm_state) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vnni = c & (1u << 11);
  }
  f.amx_int8 = tile_state && (d & (1u << 24)) && (d & (1u << 25));  // AMX-TILE, AMX-INT8
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx_vnni = a1 & (1u << 4);
#elif defined(TENZRO_AARCH64_LINUX)
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.neon = hw & HWCAP_ASIMD;
  f.dotprod = hw & HWCAP_ASIMDDP;
  f.fp16 = (hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP);
  f.i8mm = hw2 & HWCAP2_I8MM;
  f.bf16 = hw2 & HWCAP2_BF16;
#elif defined(__aarch64__)
  f.neon = true;  // ARMv8-A: Advanced SIMD is mandatory
#endif
  return f;
}

}  // namespace

std::string CpuFeatures::ToString() const {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx_vnni, "avx_vnni");
  add(amx_int8, "amx_int8");
  add(neon, "neon");
  add(dotprod, "dotprod");
  add(i8mm, "i8mm");
  add(fp16, "fp16");
  add(bf16, "bf16");
  return s;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

int HardwareThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace tenzro
