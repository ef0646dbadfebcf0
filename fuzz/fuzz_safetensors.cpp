// libFuzzer target: the safetensors header parser (SafetensorsFile). The input
// is a whole file; every tensor the parser accepts must lie inside the mapping,
// so its first and last bytes are read (a wrong range faults here).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_common.hpp"
#include "model/safetensors.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path path = staticlm::fuzz::scratch_path("model.safetensors");
    staticlm::fuzz::write_scratch(path, data, size);
    try {
        staticlm::SafetensorsFile file(path);
        volatile unsigned sink = 0;
        for (const auto& [name, t] : file.tensors()) {
            if (t.bytes == 0) continue;
            sink = sink + unsigned(t.data[0]) + unsigned(t.data[t.bytes - 1]);
            if (t.numel <= 4096 && (t.dtype == staticlm::DType::f32 || t.dtype == staticlm::DType::f16 ||
                                    t.dtype == staticlm::DType::bf16))
                sink = sink + unsigned(staticlm::read_f32(t).size());
        }
    } catch (const staticlm::Error&) {
    }
    return 0;
}
