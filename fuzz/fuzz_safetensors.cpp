// libFuzzer target: the safetensors header parser (SafetensorsFile). The input
// is a whole file; every tensor the parser accepts must lie inside the file,
// so its first and last bytes are read — outside the try: a read that fails
// on an accepted tensor escapes as an uncaught exception and is reported.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuzz/fuzz_common.hpp"
#include "model/safetensors.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path path = staticlm::fuzz::scratch_path("model.safetensors");
    staticlm::fuzz::write_scratch(path, data, size);
    std::unique_ptr<staticlm::SafetensorsFile> file;
    try {
        file = std::make_unique<staticlm::SafetensorsFile>(path);
    } catch (const staticlm::Error&) {
        return 0;
    }
    volatile unsigned sink = 0;
    for (const auto& [name, t] : file->tensors()) {
        if (t.bytes == 0) continue;
        unsigned char first = 0, last = 0;
        staticlm::read_tensor_bytes(t, 0, 1, &first);
        staticlm::read_tensor_bytes(t, t.bytes - 1, 1, &last);
        sink = sink + first + last;
        if (t.numel <= 4096 &&
            (t.dtype == staticlm::DType::f32 || t.dtype == staticlm::DType::f16 ||
             t.dtype == staticlm::DType::bf16))
            sink = sink + unsigned(staticlm::read_f32(t).size());
    }
    return 0;
}
