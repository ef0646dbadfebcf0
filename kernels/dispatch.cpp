// Start-up CPU detection and the per-target function tables. The best target
// is chosen once; callers hold a `const KernelTable&` and call through it.
// Which targets are compiled in comes from meson (STATICLM_COMPILED_TARGETS,
// X(name) per target library); what each needs of the CPU is kTargets below.
#include <array>
#include <string>

#include "kernels/kernels.hpp"
#include "staticlm/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if !defined(STATICLM_COMPILED_TARGETS)
#define STATICLM_COMPILED_TARGETS X(generic)
#endif

namespace staticlm::kernels {

#define X(ns)                                                    \
    namespace ns {                                               \
    void fill_table(KernelTable& table, const CpuFeatures& cpu); \
    }
STATICLM_COMPILED_TARGETS
#undef X

namespace {

// Every target the code knows, in Target order: its name and the CPU feature it needs.
struct TargetInfo {
    Target target;
    const char* name;
    bool CpuFeatures::*needs;  // null: runs everywhere
};
constexpr TargetInfo kTargets[] = {
    {Target::generic, "generic", nullptr},
    {Target::avx2, "avx2", &CpuFeatures::avx2_fma_f16c},
    {Target::avx2_vnni, "avx2-vnni", &CpuFeatures::avx_vnni},
    {Target::avx512, "avx512-vnni", &CpuFeatures::avx512},
};
constexpr bool in_target_order() {
    for (size_t i = 0; i < std::size(kTargets); ++i)
        if (size_t(kTargets[i].target) != i) return false;
    return true;
}
static_assert(in_target_order());

struct Compiled {
    Target target;
    void (*fill)(KernelTable&, const CpuFeatures&);
};
#define X(ns) Compiled{Target::ns, &ns::fill_table},
constexpr Compiled kCompiled[] = {STATICLM_COMPILED_TARGETS};
#undef X
#define X(ns) Target::ns,
constexpr Target kCompiledTargets[] = {STATICLM_COMPILED_TARGETS};
#undef X

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
    const bool f16c = cpuid_bit(1, 0, 2, 29);    // CPUID.1:ECX[29]
    const bool avxvnni = cpuid_bit(7, 1, 0, 4);  // CPUID.(7,1):EAX[4]
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
    const size_t i = size_t(target);
    if (i >= std::size(kTargets)) return false;
    return !kTargets[i].needs || f.*kTargets[i].needs;
}

struct Tables {
    std::array<KernelTable, std::size(kTargets)> by_target{};
    Target best = Target::generic;

    Tables() {
        const CpuFeatures cpu = cpu_features();
        for (const Compiled& c : kCompiled) {
            if (!runnable(c.target, cpu)) continue;
            c.fill(by_target[size_t(c.target)], cpu);
            if (c.target > best) best = c.target;  // Target is ordered by capability
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
    const size_t i = size_t(target);
    return i < std::size(kTargets) ? kTargets[i].name : "?";
}

std::span<const Target> compiled_targets() { return kCompiledTargets; }

bool target_supported(Target target) {
    for (Target t : kCompiledTargets)
        if (t == target) return runnable(t, cpu_features());
    return false;
}

Target best_target() { return tables().best; }

const KernelTable& table_for(Target target) {
    if (!target_supported(target))
        throw Error(ErrorKind::unsupported, std::string("kernel target ") + target_name(target) +
                                                " is not compiled in or not supported by this CPU");
    return tables().by_target[size_t(target)];
}

const KernelTable& table() { return table_for(best_target()); }

}  // namespace staticlm::kernels
