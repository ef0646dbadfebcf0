// C API 1 versions of the *_default_params() calls whose struct grew in C API
// 2, built into libstaticlm.so only (the archive has no symbol versions).
//
// Such a call returns its struct by value into memory the caller sized with
// its own header: a program built against C API 1 has room for the C API 1
// layout only, and writing the longer one would overrun its stack. So the old
// layout keeps its own function, bound as version STATICLM_1 by programs
// linked against a C API 1 library; the new layout is the default version,
// STATICLM_2 (runtime/staticlm.map). tests/tools/test_c_api_v1.sh runs v1
// programs against this library.
#include <cstddef>
#include <cstring>

#include "staticlm/staticlm.h"

namespace {

// The C API 1 layouts: the current structs up to the first field C API 2
// added, rounded up to their alignment (slm_session_params's ended in 4
// bytes of padding, which its new field took).
template <size_t N>
struct alignas(8) V1Layout {
    unsigned char bytes[N];
};
using SessionParamsV1 = V1Layout<offsetof(slm_session_params, all_logits) + 4>;
using GenerateParamsV1 = V1Layout<offsetof(slm_generate_params, on_token_info)>;
// Over 16 bytes, both are returned through a pointer the caller passes
// (x86-64 and aarch64 alike), whatever their fields.
static_assert(sizeof(SessionParamsV1) == 64 && sizeof(GenerateParamsV1) == 72,
              "the C API 1 sizes of slm_session_params and slm_generate_params");
static_assert(sizeof(slm_session_params) > sizeof(SessionParamsV1) &&
                  sizeof(slm_generate_params) > sizeof(GenerateParamsV1),
              "the current layouts are longer");

template <class V1, class T>
V1 v1_prefix(T current) {
    current.size = sizeof(V1);
    V1 out;
    std::memcpy(out.bytes, &current, sizeof out.bytes);
    return out;
}

}  // namespace

extern "C" {
SLM_API SessionParamsV1 slm1_session_default_params(void) {
    return v1_prefix<SessionParamsV1>(slm_session_default_params());
}
SLM_API GenerateParamsV1 slm1_generate_default_params(void) {
    return v1_prefix<GenerateParamsV1>(slm_generate_default_params());
}
}  // extern "C"

__asm__(".symver slm1_session_default_params, slm_session_default_params@STATICLM_1");
__asm__(".symver slm1_generate_default_params, slm_generate_default_params@STATICLM_1");
