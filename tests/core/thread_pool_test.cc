// core::ThreadPool: every task runs once, FIFO on one worker, Shutdown drops
// the unstarted ones and refuses new ones, and a spinning pool (the compute
// pools' setting) behaves the same, wakes for work that arrives while it
// polls or sleeps, and stops without waiting out its spin.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <vector>

namespace tenzro {
namespace {

using std::chrono::microseconds;

void RunsEveryTaskOnce(microseconds spin) {
  ThreadPool pool(3, "t", spin);
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int> done{0};
  std::promise<void> all;
  for (int i = 0; i < 1000; ++i)
    ASSERT_TRUE(pool.Submit([&, i] {
      hits[i].fetch_add(1);
      if (done.fetch_add(1) + 1 == 1000) all.set_value();
    }));
  all.get_future().wait();
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_EQ(pool.pending(), 0u);
}

TEST(ThreadPoolTest, RunsEveryTaskOnce) { RunsEveryTaskOnce(microseconds(0)); }
TEST(ThreadPoolTest, SpinningPoolRunsEveryTaskOnce) { RunsEveryTaskOnce(microseconds(200)); }

TEST(ThreadPoolTest, OneWorkerRunsInSubmissionOrder) {
  for (microseconds spin : {microseconds(0), microseconds(100)}) {
    ThreadPool pool(1, "fifo", spin);
    std::vector<int> order;
    std::promise<void> last;
    for (int i = 0; i < 100; ++i)
      pool.Submit([&, i] {
        order.push_back(i);
        if (i == 99) last.set_value();
      });
    last.get_future().wait();
    ASSERT_EQ(order.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  }
}

TEST(ThreadPoolTest, ShutdownDropsQueuedTasksAndRefusesNewOnes) {
  ThreadPool pool(1, "stop", microseconds(50));
  std::promise<void> release, started;
  std::atomic<int> ran{0};
  pool.Submit([&] {
    started.set_value();
    release.get_future().wait();
  });
  started.get_future().wait();
  for (int i = 0; i < 10; ++i) pool.Submit([&] { ran.fetch_add(1); });
  EXPECT_EQ(pool.pending(), 10u);
  std::thread stopper([&] { pool.Shutdown(); });
  // Shutdown drops the queue at once, then waits for the running task.
  while (pool.pending() != 0) std::this_thread::yield();
  release.set_value();
  stopper.join();
  EXPECT_EQ(ran.load(), 0);
  EXPECT_FALSE(pool.Submit([] {}));
}

TEST(ThreadPoolTest, WorkArrivingAfterTheSpinEndedStillWakesAWorker) {
  ThreadPool pool(2, "late", microseconds(20));
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: workers sleep
    std::promise<void> p;
    pool.Submit([&] { p.set_value(); });
    p.get_future().wait();
  }
}

TEST(ThreadPoolTest, ShutdownDoesNotWaitOutALongSpin) {
  // Workers polling for 60 s must notice Shutdown; a hang here is the failure.
  auto pool = std::make_unique<ThreadPool>(2, "long", std::chrono::seconds(60));
  std::promise<void> p;
  pool->Submit([&] { p.set_value(); });
  p.get_future().wait();  // the workers are now polling
  pool.reset();
  SUCCEED();
}

}  // namespace
}  // namespace tenzro
