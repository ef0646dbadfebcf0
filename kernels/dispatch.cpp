// Start-up CPU detection and the per-target function tables. The best target
// is chosen once; callers hold a `const KernelTable&` and call through it.
// Which targets are compiled in comes from meson (STATICLM_COMPILED_TARGETS,
// X(name) per target library); what each needs of the CPU is kTargets below.
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/kernels.hpp"
#include "staticlm/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
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
    {Target::avx512_amx, "avx512-amx", &CpuFeatures::amx_int8},
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
// avx512_amx is compiled in only with avx512 (kernels/meson.build), as its
// table with the AMX matmuls; the other targets are filled without them.
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

// AMX-TILE and AMX-INT8 in CPUID.(7,0):EDX[24,25]; XTILECFG and XTILEDATA
// enabled in XCR0 (bits 17, 18); then Linux hands out the 8 KiB tile state
// only to a process that asks (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA),
// else the first tile instruction faults. A refusal (old kernel, valgrind)
// leaves AMX off.
bool amx_usable() {
    if (!cpuid_bit(7, 0, 3, 24) || !cpuid_bit(7, 0, 3, 25) || !cpuid_bit(1, 0, 2, 27)) return false;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
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
    // STATICLM_VBMI=0 runs the VBMI-free paths on a VBMI CPU (to test and
    // compare them on one machine).
    const char* vbmi = std::getenv("STATICLM_VBMI");
    f.avx512_vbmi = f.avx512 && __builtin_cpu_supports("avx512vbmi") && !(vbmi && std::strcmp(vbmi, "0") == 0);
    f.amx_int8 = f.avx512 && amx_usable();
    f.amx_bf16 = f.amx_int8 && cpuid_bit(7, 0, 3, 22);  // CPUID.(7,0):EDX[22]
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
            CpuFeatures own = cpu;
            if (c.target != Target::avx512_amx) own.amx_int8 = own.amx_bf16 = false;
            c.fill(by_target[size_t(c.target)], own);
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

namespace {

// STATICLM_KERNELS=<target name>, or the best target.
Target chosen_target() {
    const char* want = std::getenv("STATICLM_KERNELS");
    if (!want || !*want) return tables().best;
    std::string names;
    for (const TargetInfo& t : kTargets) {
        if (std::strcmp(want, t.name) == 0) {
            if (!target_supported(t.target)) break;
            return t.target;
        }
    }
    for (Target t : kCompiledTargets)
        if (runnable(t, cpu_features())) names += std::string(names.empty() ? "" : ", ") + target_name(t);
    throw Error(ErrorKind::config, std::string("STATICLM_KERNELS=") + want +
                                       ": not a kernel target this build and CPU run (they are: " +
                                       names + ")");
}

}  // namespace

Target best_target() {
    static const Target t = chosen_target();
    return t;
}

const KernelTable& table_for(Target target) {
    if (!target_supported(target))
        throw Error(ErrorKind::unsupported, std::string("kernel target ") + target_name(target) +
                                                " is not compiled in or not supported by this CPU");
    return tables().by_target[size_t(target)];
}

const KernelTable& table() { return table_for(best_target()); }

}  // namespace staticlm::kernels
