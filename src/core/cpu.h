// tenzro core: run-time CPU feature detection.
//
// SIMD kernels are compiled per ISA (files *_avx2.cc, *_avx512.cc on x86-64;
// *_neon.cc, *_dotprod.cc, *_i8mm.cc on aarch64; cmake/TenzroModule.cmake) and
// chosen at run time from these flags, so one binary runs on any CPU of its
// architecture. x86: a feature is reported only when both the CPU (cpuid) and
// the operating system (xgetbv: the register state is saved on context
// switch) support it. aarch64 (Linux): the kernel's hwcaps (getauxval), which
// already say both. Flags of the other architecture are always false.
//
// Thread-safe: the flags are detected once, on first use.
#pragma once

#include <string>

namespace tenzro {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;  // AVX512_VNNI (vpdpbusd on zmm)
  bool avx_vnni = false;    // AVX-VNNI (vpdpbusd on ymm, VEX encoded)
  bool amx_int8 = false;    // AMX-TILE + AMX-INT8 with tile state enabled by the OS

  bool neon = false;     // aarch64 Advanced SIMD (HWCAP_ASIMD; every ARMv8-A core)
  bool dotprod = false;  // SDOT/UDOT (HWCAP_ASIMDDP; ARMv8.2-A option, v8.4 mandatory)
  bool i8mm = false;     // SMMLA/UMMLA/USMMLA (HWCAP2_I8MM; ARMv8.6-A)
  bool fp16 = false;     // half-precision arithmetic (HWCAP_FPHP + HWCAP_ASIMDHP)
  bool bf16 = false;     // BFDOT/BFMMLA (HWCAP2_BF16)

  // AVX2 + FMA + F16C: what *_avx2.cc files are compiled for.
  bool HasAvx2Set() const { return avx2 && fma && f16c; }
  // F/BW/VL/DQ/VNNI on top of the AVX2 set: what *_avx512.cc files are compiled for.
  bool HasAvx512Set() const { return HasAvx2Set() && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni; }
  // What *_neon.cc, *_dotprod.cc and *_i8mm.cc files are compiled for.
  bool HasNeonSet() const { return neon; }
  bool HasDotprodSet() const { return neon && dotprod; }
  bool HasI8mmSet() const { return HasDotprodSet() && i8mm; }
  // "avx2 fma f16c ..." / "neon dotprod ..." (the supported flags, space separated).
  std::string ToString() const;
};

// The features of the CPU this process runs on (detected once).
const CpuFeatures& GetCpuFeatures();

// Hardware threads this process may run on (its CPU affinity mask; falls back
// to std::thread::hardware_concurrency). Always >= 1.
int HardwareThreads();

}  // namespace tenzro
