// Dispatch: every compiled target the CPU supports gets a complete table, and
// the best target is one of them.
#include <doctest/doctest.h>

#include <cstdlib>

#include "kernels/kernels.hpp"

using namespace staticlm::kernels;

TEST_CASE("the best target is supported and its table is complete") {
    const Target best = best_target();
    CHECK(target_supported(best));
    CHECK(table().target == best);
    for (Target t : compiled_targets()) {
        if (!target_supported(t)) continue;
        const KernelTable& kt = table_for(t);
        CHECK(kt.target == t);
        CHECK(bool(kt.matmul_q8));
        CHECK(bool(kt.attention));
        CHECK(bool(kt.from_f16));
    }
}

TEST_CASE("avx512-amx exists exactly where the CPU and the OS grant AMX") {
    const CpuFeatures cpu = cpu_features();
    if (!cpu.amx_int8) {
        MESSAGE("skipped: no AMX (or the kernel refused the tile state)");
        CHECK_FALSE(target_supported(Target::avx512_amx));
        return;
    }
    bool compiled = false;
    for (Target t : compiled_targets()) compiled |= t == Target::avx512_amx;
    if (!compiled) {
        MESSAGE("skipped: this build has no AMX target (the assembler lacks AMX)");
        return;
    }
    REQUIRE(target_supported(Target::avx512_amx));
    if (!std::getenv("STATICLM_KERNELS")) CHECK(best_target() == Target::avx512_amx);
    const KernelTable& amx = table_for(Target::avx512_amx);
    const KernelTable& plain = table_for(Target::avx512);
    CHECK((amx.matmul_q8 != plain.matmul_q8));
    // The formats with one scale per group of 32 run on the AMX tile too;
    // those with sub-groups of 16 (q6k, q3k, q2k) stay on the VNNI tile.
    using W = staticlm::WeightType;
    for (const auto type : {W::q4, W::q5, W::q4k, W::q5k, W::q4a, W::q5a, W::iq4nl, W::iq4xs})
        CHECK_MESSAGE((amx.format(type).matmul != plain.format(type).matmul), staticlm::weight_type_name(type));
    for (const auto type : {W::q6k, W::q3k, W::q2k})
        CHECK_MESSAGE((amx.format(type).matmul == plain.format(type).matmul), staticlm::weight_type_name(type));
    if (cpu.amx_bf16 && cpu.avx512_bf16) CHECK((amx.matmul_bf16 != plain.matmul_bf16));
    CHECK((amx.peaks.amx_int8 != nullptr));
    CHECK((plain.peaks.amx_int8 == nullptr));
    CHECK((amx.peaks.amx_int8_k32 != nullptr));
    CHECK((plain.peaks.amx_int8_k32 == nullptr));
    CHECK(amx.peaks.amx_int8_k32_ops * 2 == amx.peaks.amx_int8_ops);  // half the K per product
    CHECK((amx.matmul_f16 == plain.matmul_f16));
}

TEST_CASE("f16 and bf16 scalar conversions round to nearest even") {
    CHECK(f32_to_f16(1.0f) == 0x3c00);
    CHECK(f32_to_f16(-2.0f) == 0xc000);
    CHECK(f32_to_f16(65504.0f) == 0x7bff);
    CHECK(f32_to_f16(65520.0f) == 0x7c00);        // rounds up to inf
    CHECK(f32_to_f16(5.9604645e-8f) == 0x0001);   // smallest subnormal
    CHECK(f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);  // tie -> even
    CHECK(f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);  // tie -> even (up)
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const uint16_t v = uint16_t(h);
        const bool nan = (v & 0x7c00) == 0x7c00 && (v & 0x3ff);
        if (nan) continue;
        CHECK_MESSAGE(f32_to_f16(f16_to_f32(v)) == v, "half ", h);
    }
    CHECK(f32_to_bf16(1.0f) == 0x3f80);
    CHECK(bf16_to_f32(0x3f80) == 1.0f);
    CHECK(f32_to_bf16(1.00390625f) == 0x3f80);  // tie -> even
    CHECK(f32_to_bf16(1.01171875f) == 0x3f82);  // tie -> even (up)
}
