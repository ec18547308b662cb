// tenzro core: run-time CPU feature detection.
//
// SIMD kernels are compiled per ISA (files *_avx2.cc, *_avx512.cc, see
// cmake/TenzroModule.cmake) and chosen at run time from these flags, so one
// binary runs on any x86-64. A feature is reported only when both the CPU
// (cpuid) and the operating system (xgetbv: the register state is saved on
// context switch) support it. On non-x86 builds every flag is false.
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

  // AVX2 + FMA + F16C: what *_avx2.cc files are compiled for.
  bool HasAvx2Set() const { return avx2 && fma && f16c; }
  // F/BW/VL/DQ/VNNI on top of the AVX2 set: what *_avx512.cc files are compiled for.
  bool HasAvx512Set() const { return HasAvx2Set() && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni; }
  // "avx2 fma f16c ..." (the supported flags, space separated).
  std::string ToString() const;
};

// The features of the CPU this process runs on (detected once).
const CpuFeatures& GetCpuFeatures();

// Hardware threads this process may run on (its CPU affinity mask; falls back
// to std::thread::hardware_concurrency). Always >= 1.
int HardwareThreads();

}  // namespace tenzro
