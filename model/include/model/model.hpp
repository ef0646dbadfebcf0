// A loaded model: config, packed weights in one anonymous arena, tokenizer.
// Immutable after load, shared by any number of sessions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/memory.hpp"
#include "staticlm/types.hpp"
#include "model/config.hpp"
#include "tokenizer/tokenizer.hpp"
#include "model/weights.hpp"

namespace staticlm {

class Model {
public:
    // Loads a Hugging Face directory (config.json, safetensors, tokenizer), a
    // GGUF file (*.gguf) or a llama2.c file (*.bin).
    static std::shared_ptr<const Model> load(const std::filesystem::path& dir,
                                             const LoadOptions& options);
    // Deterministic random weights of the config's shapes (for benchmarks and
    // tests); no files, no tokenizer.
    static std::shared_ptr<const Model> synthetic(const ModelConfig& config, WeightType weights,
                                                  uint64_t seed, int threads, int act_bits = 8);

    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    // The format asked for (with --weights native: the one most bytes are in).
    WeightType weight_type() const { return weight_type_; }
    bool native_weights() const { return native_weights_; }
    int act_bits() const { return act_bits_; }
    // Every format a matrix of this model is in, in format order.
    const std::vector<WeightType>& matrix_types() const { return matrix_types_; }
    const Tokenizer* tokenizer() const { return tokenizer_.get(); }
    size_t weight_bytes() const { return arena_.size(); }
    double load_seconds() const { return load_seconds_; }
    // Every weight with its role, name and shape (api.cpp counts matmuls from
    // it). Entries point into this Model's weights: a Model is not moved once
    // loaded (the loaders build it in its shared_ptr).
    const std::vector<WeightEntry>& plan() const { return plan_; }
    // What the loader noticed but did not refuse (tensors the model does not
    // use, a head that overrides tying): one line each, for the caller to show.
    const std::vector<std::string>& warnings() const { return warnings_; }

    Model() = default;  // use load()/synthetic()

    // Filled by the loaders (model/loader.cpp, model/synthetic.cpp).
    ModelConfig config_;
    ModelWeights weights_;
    WeightType weight_type_ = WeightType::q8;
    bool native_weights_ = false;
    int act_bits_ = 8;  // of every matrix (PackedMatrix::act_bits)
    std::vector<WeightType> matrix_types_;
    std::unique_ptr<Tokenizer> tokenizer_;
    Buffer arena_;
    double load_seconds_ = 0.0;
    std::vector<WeightEntry> plan_;
    std::vector<std::string> warnings_;
};

}  // namespace staticlm
