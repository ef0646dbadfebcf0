// The thread pool (kernels/parallel.hpp): team shape, barriers, dynamic
// indices, nesting, concurrent callers, exceptions and the spin setting.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/parallel.hpp"
#include "staticlm/types.hpp"

using namespace staticlm;
using kernels::Team;

TEST_CASE("parallel: every thread of the team runs once, with its own id") {
    for (int n : {1, 2, 3, 5, 8}) {
        const int want = std::min(n, kernels::pool_capacity());
        std::vector<std::atomic<int>> seen(static_cast<size_t>(want));
        std::atomic<int> size_mismatch{0};
        kernels::parallel_fixed(n, [&](const Team& t) {
            if (t.size() != want) size_mismatch.fetch_add(1);
            seen[size_t(t.tid())].fetch_add(1);
        });
        CHECK(size_mismatch.load() == 0);
        for (int i = 0; i < want; ++i) CHECK_MESSAGE(seen[size_t(i)].load() == 1, "n=" << n << " tid " << i);
    }
}

TEST_CASE("parallel: the team is clamped to the pool's capacity (max_threads)") {
    CHECK(kernels::pool_capacity() == max_threads());
    std::atomic<int> size{0};
    kernels::parallel_fixed(1000000, [&](const Team& t) {
        if (t.tid() == 0) size = t.size();
    });
    CHECK(size.load() == max_threads());
}

TEST_CASE("parallel: a barrier separates the phases of a region") {
    // Each phase reads what every thread wrote in the phase before: a barrier
    // that let a thread through early would read a stale value.
    const int n = std::min(4, kernels::pool_capacity());
    constexpr int kPhases = 200;
    std::vector<int> cell(size_t(n), 0);
    std::atomic<int> wrong{0};
    kernels::parallel_fixed(n, [&](const Team& t) {
        for (int p = 1; p <= kPhases; ++p) {
            cell[size_t(t.tid())] = p;
            t.barrier();
            for (int j = 0; j < t.size(); ++j)
                if (cell[size_t(j)] != p) wrong.fetch_add(1);
            t.barrier();
        }
    });
    CHECK(wrong.load() == 0);
}

TEST_CASE("parallel_for: every index exactly once, whatever the team") {
    for (int n_threads : {1, 2, 3, 8})
        for (int n : {0, 1, 2, 7, 1000}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            kernels::parallel_for(n_threads, n, [&](int i, const Team&) { hits[size_t(i)].fetch_add(1); });
            int bad = 0;
            for (auto& h : hits) bad += h.load() != 1;
            CHECK_MESSAGE(bad == 0, "threads " << n_threads << ", n " << n);
        }
}

TEST_CASE("parallel: a nested region runs on its caller alone") {
    std::atomic<int> inner_sizes{0}, inner_runs{0};
    kernels::parallel_fixed(2, [&](const Team&) {
        CHECK(kernels::in_parallel_region());
        kernels::parallel(4, [&](const Team& inner) {
            inner_sizes.fetch_add(inner.size());
            inner_runs.fetch_add(1);
        });
    });
    const int outer = std::min(2, kernels::pool_capacity());
    CHECK(inner_runs.load() == outer);
    CHECK(inner_sizes.load() == outer);  // each a team of one
    CHECK_FALSE(kernels::in_parallel_region());
}

TEST_CASE("parallel: regions from two program threads take turns and both complete") {
    std::atomic<long> sum_a{0}, sum_b{0};
    auto work = [](std::atomic<long>& sum) {
        for (int rep = 0; rep < 200; ++rep)
            kernels::parallel_for(2, 50, [&](int i, const Team&) { sum.fetch_add(i); });
    };
    std::thread a([&] { work(sum_a); });
    std::thread b([&] { work(sum_b); });
    a.join();
    b.join();
    CHECK(sum_a.load() == 200L * (49 * 50 / 2));
    CHECK(sum_b.load() == 200L * (49 * 50 / 2));
}

TEST_CASE("parallel: an exception in any thread reaches the caller after the region") {
    const int n = std::min(3, kernels::pool_capacity());
    std::atomic<int> finished{0};
    auto region = [&] {
        kernels::parallel_fixed(n, [&](const Team& t) {
            if (t.tid() == t.size() - 1) throw std::runtime_error("from the last thread");
            finished.fetch_add(1);
        });
    };
    CHECK_THROWS_WITH_AS(region(), "from the last thread", std::runtime_error);
    CHECK(finished.load() == n - 1);
    // The pool is usable afterwards, and the error is not reported twice.
    std::atomic<int> runs{0};
    kernels::parallel_fixed(n, [&](const Team&) { runs.fetch_add(1); });
    CHECK(runs.load() == n);
}

TEST_CASE("parallel: STATICLM_SPIN_US accepts 0 .. 100000 µs and nothing else") {
    CHECK(kernels::parse_spin_us(nullptr) == kernels::kDefaultSpinUs);
    CHECK(kernels::parse_spin_us("") == kernels::kDefaultSpinUs);
    CHECK(kernels::parse_spin_us("0") == 0);
    CHECK(kernels::parse_spin_us("75") == 75);
    CHECK(kernels::parse_spin_us("100000") == 100000);
    CHECK(kernels::parse_spin_us("100001") == -1);
    CHECK(kernels::parse_spin_us("99999999999999999999") == -1);
    CHECK(kernels::parse_spin_us("-1") == -1);
    CHECK(kernels::parse_spin_us("5us") == -1);
    CHECK(kernels::parse_spin_us(" 5") == -1);
    const int us = kernels::spin_us();
    CHECK(us >= 0);
    CHECK(us <= 100000);
}

TEST_CASE("StallGuard: losses, not imbalance, start a solo period; one stall on probation doubles it") {
    using G = kernels::detail::StallGuard;
    constexpr int64_t ms = 1'000'000;
    G g;
    int64_t t = 1000 * ms;
    // Planned imbalance: a 10 ms region in which nobody lost time.
    for (int i = 0; i < 10; ++i) CHECK_FALSE(g.note(t += 10 * ms, 10 * ms, 0));
    // Losses under 1 ms, or under half the region, are not stalls.
    for (int i = 0; i < 10; ++i) CHECK_FALSE(g.note(t += 10 * ms, 10 * ms, ms / 2));
    for (int i = 0; i < 10; ++i) CHECK_FALSE(g.note(t += 10 * ms, 10 * ms, 4 * ms));
    CHECK(g.shrinks() == 0);
    CHECK_FALSE(g.solo(t));
    // A stall then a clean region cancel out; two stalls net start 200 ms solo.
    CHECK_FALSE(g.note(t += 10 * ms, 10 * ms, 6 * ms));
    CHECK(g.watching(t));
    CHECK_FALSE(g.note(t += 10 * ms, 10 * ms, 0));
    CHECK_FALSE(g.watching(t));
    CHECK_FALSE(g.note(t += 10 * ms, 10 * ms, 6 * ms));
    CHECK(g.note(t += 10 * ms, 10 * ms, 6 * ms));
    CHECK(g.shrinks() == 1);
    CHECK(g.solo(t + G::kShrinkNs - 1));
    CHECK_FALSE(g.solo(t + G::kShrinkNs));
    // For 2 s after a solo period every region is watched, and one stall
    // starts the next period: 400 ms, then 800 ms, ... up to 12.8 s.
    int64_t period = G::kShrinkNs;
    for (int round = 0; round < 8; ++round) {
        t = g.solo_until();
        CHECK_FALSE(g.watching(t - 1));
        CHECK(g.watching(t));
        CHECK(g.watching(t + 1999 * ms));
        t += 100 * ms;
        CHECK_FALSE(g.note(t, 10 * ms, 0));  // a clean region changes nothing
        CHECK(g.note(t += 10 * ms, 10 * ms, 6 * ms));
        period = std::min(2 * period, G::kMaxShrinkNs);
        CHECK(g.solo_until() == t + period);
    }
    // A quiet spell longer than 2 s: no longer watched, two stalls again, 200 ms.
    t = g.solo_until() + 3000 * ms;
    CHECK_FALSE(g.watching(t));
    CHECK_FALSE(g.note(t, 10 * ms, 6 * ms));
    CHECK(g.note(t += 10 * ms, 10 * ms, 6 * ms));
    CHECK(g.solo_until() == t + G::kShrinkNs);
}

TEST_CASE("parallel: a thread that keeps losing its core makes regions run on the caller, for a while") {
    if (kernels::fixed_team_size(2) < 2) return;  // no team to shrink
    kernels::detail::reset_pool_guard();
    // Worker 1 is off its core for 5 ms (asleep: as if another process had
    // it) in each region, the caller's part is instant. Regions are sampled
    // while the guard watches, so the second stalled region starts a solo
    // period (the first is sampled once in a few; run enough of them).
    const uint64_t before = kernels::pool_shrinks();
    for (int r = 0; r < 8 && kernels::pool_shrinks() == before; ++r)
        kernels::parallel(2, [](const Team& t) {
            if (t.tid() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        });
    CHECK(kernels::pool_shrinks() == before + 1);
    std::atomic<int> size{0};
    kernels::parallel(2, [&](const Team& t) { size = t.size(); });
    CHECK(size.load() == 1);
    // parallel_fixed ignores the guard (the probe measures n threads).
    kernels::parallel_fixed(2, [&](const Team& t) { size = t.size(); });
    CHECK(size.load() == 2);
    kernels::detail::reset_pool_guard();
    kernels::parallel(2, [&](const Team& t) { size = t.size(); });
    CHECK(size.load() == 2);
}
