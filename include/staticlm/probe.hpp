// This machine's ceilings, measured by the running binary: memory read
// bandwidth over a buffer much larger than the last-level cache, and peak
// int8 dot (vpdpbusd), fp32 FMA, bf16 dot (vdpbf16ps) and AMX-INT8 tile
// (tdpbusd) throughput.
#pragma once

#include <string>

namespace staticlm {

struct MachineCeilings {
    double read_gb_per_s = 0;         // best pass of a multi-threaded streaming read
    double read_gb_per_s_median = 0;
    double int8_gops = 0;             // u8·s8 multiply-adds counted as 2 ops
    double fp32_gflops = 0;           // FMA counted as 2 flops
    double bf16_gflops = 0;           // 0 without AVX512-BF16
    double amx_int8_gops = 0;         // AMX-INT8 tile dot products; 0 without AMX
    // The same with 32 bytes of K per product (one q8 group, whose scales end
    // the sum there): each instruction takes as long as a full 64-byte one.
    double amx_int8_k32_gops = 0;
    double amx_bf16_gflops = 0;       // AMX-BF16 tile dot products; 0 without AMX
    std::string isa;                  // which code path measured them
    int threads = 0;
};

// Takes one to a few seconds (quick: a fraction, rough figures). isa: "" for
// the best available, or "avx2" to force the 256-bit path.
MachineCeilings measure_ceilings(int threads, bool quick = false, const std::string& isa = "");

// How many times, since the process started, the thread pool saw its threads
// keep losing their cores mid-region (a loaded or oversubscribed machine) and
// ran the next regions on one thread for a while. 0 on a machine of one's own.
uint64_t thread_pool_shrinks();

}  // namespace staticlm
