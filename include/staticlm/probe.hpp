// This machine's ceilings, measured by the running binary: memory read
// bandwidth over a buffer much larger than the last-level cache, int8 dot
// (vpdpbusd / maddubs) and fp32 FMA throughput, with a given thread count.
#pragma once

namespace staticlm {

struct MachineCeilings {
    double read_gb_per_s = 0;
    double int8_gops = 0;    // int8 multiply-adds counted as 2 ops
    double fp32_gflops = 0;  // FMA counted as 2 flops
};

// Takes about a second. buffer_mib: the bandwidth probe's buffer (default 1 GiB).
MachineCeilings measure_ceilings(int threads, int buffer_mib = 1024);

}  // namespace staticlm
