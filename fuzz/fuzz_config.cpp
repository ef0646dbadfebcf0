// libFuzzer target: config.json text -> ModelConfig (parse_model_config). Seeds
// are the fixtures' real configs, so mutations stay close to valid files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/config.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const staticlm::ModelConfig cfg = staticlm::parse_model_config(text, "config.json");
        (void)cfg;
    } catch (const staticlm::Error&) {
    }
    return 0;
}
