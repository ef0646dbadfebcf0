// Loading models for the public API. Model itself is opaque here; sessions
// share it through std::shared_ptr.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/config.hpp"
#include "staticlm/tokenizer.hpp"
#include "staticlm/types.hpp"

namespace staticlm {

class Model;

// A Hugging Face directory (config.json, safetensors, tokenizer files), a
// GGUF file (*.gguf: llama and gemma3 architectures, converted at load to
// options.weights, tokenizer from its metadata) or a llama2.c file (*.bin).
std::shared_ptr<const Model> load_model(const std::filesystem::path& dir, const LoadOptions& options);
// The metadata summary of a GGUF file (version, every key, arrays
// abbreviated, a tensor-type histogram), for `staticlm info`.
std::string gguf_file_summary(const std::filesystem::path& file);
// The tokenizer of a model: load_tokenizer() for a directory, the
// tokenizer.ggml.* metadata for a *.gguf file.
std::unique_ptr<Tokenizer> load_model_tokenizer(const std::filesystem::path& model, bool prefer_json);
// Deterministic random weights of a built-in shape (see synthetic_model_names()).
std::shared_ptr<const Model> synthetic_model(const std::string& name, WeightType weights,
                                             uint64_t seed, int threads, int act_bits = 8);
std::vector<std::string> synthetic_model_names();

const ModelConfig& model_config(const Model& model);
// What loading noticed but did not refuse (checkpoint tensors the model does
// not use, an lm_head that overrides tying), one line each; empty when clean.
const std::vector<std::string>& model_warnings(const Model& model);
const Tokenizer* model_tokenizer(const Model& model);  // null for synthetic models
// The format asked for; with LoadOptions::native_weights the one most bytes
// are in (model_weight_usage has them all).
WeightType model_weight_type(const Model& model);
bool model_native_weights(const Model& model);
// The weights as reports name them: the format every matrix was converted
// to ("q8"), or for a file kept in its own formats "native (q8, q4k, q6k)":
// the types its matrices have, in weight_types() order.
std::string model_weights_label(const Model& model);
int model_act_bits(const Model& model);  // LoadOptions::act_bits
size_t model_weight_bytes(const Model& model);
double model_load_seconds(const Model& model);
// The packed bytes of every matmul's weights (embedding lookups excluded, the
// output head included): what one decode step reads.
double model_matmul_bytes(const Model& model);
// The model's matrices by weight format, in format order (only formats it
// uses): how many, their weights (rows × columns, padding excluded) and the
// bytes they take in memory. A tied head is counted once. The multiply-adds
// its matmuls do split by where they run: per position (every matmul of the
// layers, and model-level ones such as Gemma 4's per-layer projection) and
// per logits row (the output head, tied or not: a prefill without all_logits
// runs it for its last position only). Lookup tables do neither.
struct WeightTypeUsage {
    WeightType type;
    int matrices = 0;
    double weights = 0;
    double bytes = 0;
    double macs_per_position = 0;
    double macs_per_logits_row = 0;
};
std::vector<WeightTypeUsage> model_weight_usage(const Model& model);

// The kernel target chosen for this CPU (e.g. "avx512-vnni").
std::string kernel_target_name();

// Whether that target runs prefill matmuls of `type` on AMX tiles (with
// act_bits-bit activations for the integer formats; 16 rows and more).
bool matmul_uses_amx(WeightType type, int act_bits);

}  // namespace staticlm
