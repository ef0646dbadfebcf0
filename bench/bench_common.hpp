// Shared pieces of the kernel benchmark lab (bench_kernels): run options, the
// machine ceilings measured at start-up, deterministic test data, and the
// registration entry points of each benchmark family.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "kernels/parallel.hpp"
#include "staticlm/probe.hpp"

namespace staticlm::bench {

struct Options {
    int threads = 1;           // passed to every kernel that takes n_threads
    bool quick = false;        // small subset for smoke runs; no cache-defeating rotation
    bool ceilings_only = false;
    bool mean = false;         // figures from the mean iteration instead of the fastest
    std::string ceiling_isa;   // "", "avx512" or "avx2": forces the ceiling code path
};

// Machine limits measured by this binary in this run (0 = not measured).
using Ceilings = MachineCeilings;

const Options& options();
const Ceilings& ceilings();


// Registration of each family, in the order they run (bench_*.cpp).
void register_matmul(const Options& opts);
void register_attention(const Options& opts);
void register_elementwise(const Options& opts);
// Frees the packed weights bench_matmul keeps between benchmarks of one shape.
void release_matmul_weights();
// Frees the K/V cache copies bench_attention keeps between benchmarks.
void release_kv_copies();

// Weights read per M=1 call (and decode's K/V) are kept out of the cache by
// rotating among copies of at least rotation_bytes() in total: twice the
// last-level cache, at least 256 MiB and at most 4 GiB (a Xeon VM here
// reports a 480 MiB L3, which held all of a 256 MiB rotation).
size_t rotation_bytes();
// Number of copies of `bytes` each that rotation needs (1 in quick mode).
int rotation_copies(size_t bytes);

// Deterministic pseudo-random fills: element i depends only on (seed, i), so
// the data do not depend on the thread count. Values are uniform in
// [-amplitude, amplitude).
void fill_f32(float* x, size_t n, uint64_t seed, float amplitude);
void fill_bf16(uint16_t* x, size_t n, uint64_t seed, float amplitude);
void fill_f16(uint16_t* x, size_t n, uint64_t seed, float amplitude);

// Wall-clock seconds spent inside a benchmark's timing loop. Counters are
// computed from this directly (Google Benchmark's rate counters would divide
// by the main thread's CPU time, which is wrong for multi-threaded kernels).
class WallTimer {
public:
    WallTimer() : t0_(std::chrono::steady_clock::now()) {}
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    }

private:
    std::chrono::steady_clock::time_point t0_;
};

// Times each call of a kernel. Figures and ratios use the fastest call by
// default: the ceilings are the fastest of many passes too, and on a shared
// machine the mean mostly measures the other processes (--mean switches to
// the mean; Google Benchmark's Time column is always the mean).
class CallTimer {
public:
    void start() { t0_ = std::chrono::steady_clock::now(); }
    void stop() {
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        total_ += s;
        if (calls_ == 0 || s < best_) best_ = s;
        ++calls_;
    }
    int64_t calls() const { return calls_; }
    // seconds per call, as the figures use it
    double seconds(bool mean) const { return mean ? total_ / double(calls_) : best_; }

private:
    std::chrono::steady_clock::time_point t0_;
    double total_ = 0, best_ = 0;
    int64_t calls_ = 0;
};

// Sets a figure and its ratio to a ceiling (ratio omitted when the ceiling is unknown).
void set_figure(benchmark::State& st, const char* name, double value, const char* ratio_name,
                double ceiling);

}  // namespace staticlm::bench
