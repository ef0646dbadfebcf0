// libFuzzer target: the speculation setting's text ("ngram", "ngram:N", "off"),
// as C API 4's slm_speculation_parse reads it (the CLI's --spec takes the same
// words). Any input gives SLM_OK with max_draft in 0..64, or an error status
// with a message; never a crash or an exception across the C boundary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "staticlm/staticlm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);  // stops at the first NUL for the C API
    slm_speculation_params p = slm_speculation_default_params();
    const slm_status st = slm_speculation_parse(text.c_str(), &p);
    if (st == SLM_OK && (p.max_draft < 0 || p.max_draft > 64)) std::abort();
    if (st != SLM_OK && slm_last_error()[0] == '\0') std::abort();
    return 0;
}
