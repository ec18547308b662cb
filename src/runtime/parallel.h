// tenzro runtime: fork-join over a core ThreadPool for the compute kernels.
//
// ParallelFor(pool, n, fn) runs fn(i) for every i in [0, n) and returns when
// all have returned. The calling thread takes part: chunks are claimed from
// an atomic counter by the caller and by up to pool->size() helper tasks, so
// a busy or slow-to-wake pool only costs parallelism, never correctness or a
// deadlock (the caller alone can finish every chunk). Which thread runs a
// chunk is unspecified; callers make chunk results independent of that.
// pool == nullptr runs everything on the caller.
#pragma once

#include <chrono>
#include <functional>

#include "core/thread_pool.h"

namespace tenzro::runtime {

// How long the workers of a pool that runs ParallelFor poll for the next
// fork-join before they sleep (ThreadPool's `spin`): a decode step runs its
// matrix products back to back, tens of microseconds apart, and a sleeping
// worker takes longer than that to wake.
inline constexpr std::chrono::microseconds kComputePoolSpin{100};

// Threads that ParallelFor may use (pool size + the caller; 1 without pool).
int ParallelWidth(ThreadPool* pool);

void ParallelFor(ThreadPool* pool, int n, const std::function<void(int)>& fn);

}  // namespace tenzro::runtime
