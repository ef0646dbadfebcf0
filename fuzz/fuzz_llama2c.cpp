// libFuzzer target: llama2.c .bin checkpoints (7 int32 header + fp32 tensors)
// through Model::load, which must accept a consistent file or throw Error.
// Seeds are tiny valid files (dims 4..16), so mutations reach the weight code.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_common.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path path = staticlm::fuzz::scratch_path("model.bin");
    staticlm::fuzz::write_scratch(path, data, size);
    staticlm::LoadOptions o;
    o.weights = size % 2 ? staticlm::WeightType::q8 : staticlm::WeightType::f32;
    o.threads = 1;
    o.load_tokenizer = false;
    try {
        (void)staticlm::Model::load(path, o);
    } catch (const staticlm::Error&) {
    }
    return 0;
}
