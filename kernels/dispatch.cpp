// Start-up CPU detection and the per-target function tables. The best target
// is chosen once; callers hold a `const KernelTable&` and call through it.
#include <array>
#include <stdexcept>
#include <string>

#include "kernels/kernels.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace staticlm::kernels {

#define STATICLM_DECLARE_TARGET(ns) \
    namespace ns {                  \
    void fill_table(KernelTable& table, const CpuFeatures& cpu); \
    }
STATICLM_DECLARE_TARGET(generic)
#if STATICLM_HAVE_AVX2
STATICLM_DECLARE_TARGET(avx2)
#endif
#if STATICLM_HAVE_AVX2_VNNI
STATICLM_DECLARE_TARGET(avx2_vnni)
#endif
#if STATICLM_HAVE_AVX512
STATICLM_DECLARE_TARGET(avx512)
#endif
#undef STATICLM_DECLARE_TARGET

namespace {

constexpr Target kCompiled[] = {
    Target::generic,
#if STATICLM_HAVE_AVX2
    Target::avx2,
#endif
#if STATICLM_HAVE_AVX2_VNNI
    Target::avx2_vnni,
#endif
#if STATICLM_HAVE_AVX512
    Target::avx512,
#endif
};

#if defined(__x86_64__) || defined(__i386__)
// F16C and AVX-VNNI read from CPUID directly: clang 14's __builtin_cpu_supports
// rejects the names "f16c" and "avxvnni" (the fuzz build uses clang).
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit) {
    unsigned r[4] = {0, 0, 0, 0};
    if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[reg] >> bit) & 1u;
}
#endif

CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const bool f16c = cpuid_bit(1, 0, 2, 29);     // CPUID.1:ECX[29]
    const bool avxvnni = cpuid_bit(7, 1, 0, 4);   // CPUID.(7,1):EAX[4]
    f.avx2_fma_f16c = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    f.avx_vnni = f.avx2_fma_f16c && avxvnni;
    f.avx512 = f.avx2_fma_f16c && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
    f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
    return f;
}

bool runnable(Target target, const CpuFeatures& f) {
    switch (target) {
        case Target::generic: return true;
        case Target::avx2: return f.avx2_fma_f16c;
        case Target::avx2_vnni: return f.avx_vnni;
        case Target::avx512: return f.avx512;
    }
    return false;
}

struct Tables {
    std::array<KernelTable, 4> by_target{};
    Target best = Target::generic;

    Tables() {
        const CpuFeatures cpu = cpu_features();
        for (Target t : kCompiled) {
            if (!runnable(t, cpu)) continue;
            KernelTable& kt = by_target[static_cast<size_t>(t)];
            switch (t) {
                case Target::generic: generic::fill_table(kt, cpu); break;
#if STATICLM_HAVE_AVX2
                case Target::avx2: avx2::fill_table(kt, cpu); break;
#endif
#if STATICLM_HAVE_AVX2_VNNI
                case Target::avx2_vnni: avx2_vnni::fill_table(kt, cpu); break;
#endif
#if STATICLM_HAVE_AVX512
                case Target::avx512: avx512::fill_table(kt, cpu); break;
#endif
                default: break;
            }
            best = t;
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

CpuFeatures cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

const char* target_name(Target target) {
    switch (target) {
        case Target::generic: return "generic";
        case Target::avx2: return "avx2";
        case Target::avx2_vnni: return "avx2-vnni";
        case Target::avx512: return "avx512-vnni";
    }
    return "?";
}

std::span<const Target> compiled_targets() { return kCompiled; }

bool target_supported(Target target) {
    for (Target t : kCompiled)
        if (t == target) return runnable(t, cpu_features());
    return false;
}

Target best_target() { return tables().best; }

const KernelTable& table_for(Target target) {
    if (!target_supported(target))
        throw std::runtime_error(std::string("kernel target ") + target_name(target) +
                                 " is not compiled in or not supported by this CPU");
    return tables().by_target[static_cast<size_t>(target)];
}

const KernelTable& table() { return table_for(best_target()); }

void matmul(const KernelTable& kt, const PackedMatrix& w, const float* x, size_t ldx, int m,
            float* y, size_t ldy, std::byte* scratch, int n_threads) {
    MatmulFn fn = nullptr;
    switch (w.type) {
        case WeightType::q8: fn = kt.matmul_q8; break;
        case WeightType::f16: fn = kt.matmul_f16; break;
        case WeightType::bf16: fn = kt.matmul_bf16; break;
        case WeightType::f32: fn = kt.matmul_f32; break;
    }
    fn(w, x, ldx, m, y, ldy, scratch, n_threads);
}

}  // namespace staticlm::kernels

namespace staticlm {

const char* weight_type_name(WeightType type) {
    switch (type) {
        case WeightType::f32: return "f32";
        case WeightType::f16: return "f16";
        case WeightType::bf16: return "bf16";
        case WeightType::q8: return "q8";
    }
    return "?";
}

const char* kv_type_name(KvType type) { return type == KvType::f16 ? "f16" : "f32"; }

}  // namespace staticlm
