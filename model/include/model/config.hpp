// Reading ModelConfig (include/staticlm/config.hpp) from a checkpoint's
// config.json, generation_config.json and tokenizer_config.json. The family
// that reads a config is chosen here from config.json's "architectures" /
// "model_type" (model/family.hpp); nothing else looks at those names.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "staticlm/config.hpp"

namespace staticlm {

struct FamilyDescriptor;

// Reads <dir>/config.json (+ generation_config.json, tokenizer_config.json when
// present). Throws Error naming the file and the key on anything invalid or
// unsupported.
ModelConfig read_model_config(const std::filesystem::path& dir);

// Parses config.json text (tests and the fuzzer use this directly).
ModelConfig parse_model_config(const std::string& config_json, const std::string& file_name);

// A config with the family that read it.
struct CheckpointConfig {
    ModelConfig config;
    const FamilyDescriptor* family = nullptr;
};
CheckpointConfig parse_checkpoint_config(const std::string& config_json, const std::string& file_name);
CheckpointConfig read_checkpoint_config(const std::filesystem::path& dir);

// inv_freq helpers shared by the families (exposed for tests).
std::vector<float> rope_inv_freq_default(int head_dim, double theta);
void rope_apply_llama3(std::vector<float>& inv_freq, double factor, double low_freq_factor,
                       double high_freq_factor, double original_max_position);

}  // namespace staticlm
