// The list of tensors a config needs (names, shapes, destinations) and the one
// arena layout shared by Model::load and Model::synthetic. Internal to model/.
#pragma once

#include <string>
#include <vector>

#include "kernels/memory.hpp"
#include "model/config.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "model/weights.hpp"

namespace staticlm::detail {

struct WeightEntry {
    enum class Kind { matrix, vector, scalar };
    Kind kind = Kind::matrix;
    std::string name;              // full tensor name in the checkpoint
    int n = 0;                     // matrix rows / vector length
    int k = 0;                     // matrix columns (0 for vectors)
    PackedMatrix* matrix = nullptr;
    const float** vector = nullptr;
    float* scalar = nullptr;       // [1] tensors (Gemma layer_scalar)
    size_t offset = 0;             // into the arena (64-byte aligned)
    size_t bytes = 0;              // in the arena
};

// Fills w.layers (sized) and returns the entries for every tensor the config
// requires. `prefix` is "model." (Llama, Gemma causal LM) or
// "model.language_model." (Gemma multimodal). lm_head.weight is included only
// when with_lm_head (untied configs whose file has it).
std::vector<WeightEntry> plan_weights(const ModelConfig& c, ModelWeights& w, const std::string& prefix,
                                      bool with_lm_head);

// Assigns 64-byte aligned offsets, allocates the arena, and points every
// entry's destination into it (matrices get type/n/k/data/bytes).
Buffer layout_arena(std::vector<WeightEntry>& plan, WeightType type);

// Points lm_head at embed when it is not a separate tensor.
void finish_weights(ModelWeights& w, bool lm_head_loaded);

// Lays out the arena and converts every entry from its source tensor (shapes
// and dtypes already checked): vectors/scalars here, matrices in parallel
// panel-aligned chunks. Non-finite source values throw Error(model) naming the
// tensor and the flat index of the first one. Sets model.arena_/weight_type_.
void convert_weights(Model& model, std::vector<WeightEntry>& plan, const std::vector<const TensorView*>& src,
                     const LoadOptions& options);

// Model::load of a llama2.c .bin file (model/llama2c.cpp).
std::shared_ptr<const Model> load_llama2c(const std::filesystem::path& file, const LoadOptions& options);

// Throws Error(config) unless 0 <= threads <= max_threads(); `what` names the
// setting ("load options", "configuration").
void check_threads(int threads, const char* what);
// Resolves OpenMP thread counts (0: all cores).
int resolve_threads(int threads);

// Rows per conversion task: a multiple of kPanelRows near `target_bytes` of source.
int chunk_rows(int k, size_t elem_bytes);

}  // namespace staticlm::detail
