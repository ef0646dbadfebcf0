// The list of weights a config needs (roles, names, shapes, destinations) and
// the one arena layout shared by Model::load, Model::synthetic and the
// llama2.c loader. Which roles exist follows from ModelConfig/LayerConfig
// flags; names come from a TensorNaming. Internal to model/.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/memory.hpp"
#include "kernels/parallel.hpp"
#include "model/config.hpp"
#include "model/family.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "model/weights.hpp"

namespace staticlm::detail {

// How tensors are named: a family's naming function and where the
// checkpoint keeps the decoder (model.* and lm_head.weight by default).
struct TensorNaming {
    TensorNameFn fn = hf_tensor_name;
    TensorLayout layout;
    std::string operator()(WeightRole role, int layer, const LayerConfig* lc) const {
        return fn(role, layer, lc, layout);
    }
};

// Fills w.layers (sized) and returns the entries for every tensor the config
// requires. lm_head is included when the config is untied.
std::vector<WeightEntry> plan_weights(const ModelConfig& c, ModelWeights& w, const TensorNaming& names);

// Names of tensors a checkpoint may still carry that the config leaves unused
// on purpose (the K/V projections and k_norm of KV-sharing layers).
std::vector<std::string> unused_by_design(const ModelConfig& c, const TensorNaming& names);

// The format a matrix of this role gets when the model's weights are `type`:
// q4, q5 and q4k keep the token embedding and the output head in q8 (a 4-bit vocabulary
// matrix costs Gemma 3 270M 13% perplexity, docs/FORMATS.md), as llama.cpp
// keeps its output head at 6 bits in its 4-bit files; otherwise `type`.
WeightType matrix_type(WeightRole role, WeightType type);

// Assigns 64-byte aligned offsets, allocates the arena, and points every
// entry's destination into it (matrices get type/n/k/data/bytes, the type
// from matrix_type).
// With per_entry (one type per plan entry, read for matrices) each matrix
// gets its own type instead (--weights native).
Buffer layout_arena(std::vector<WeightEntry>& plan, WeightType type,
                    const std::vector<WeightType>* per_entry = nullptr);

// Sets every matrix's act_bits (8 or 16, else Error(config)), points lm_head
// at embed when the config is tied and keeps the plan in the model
// (Model::plan()).
void finish_weights(Model& model, std::vector<WeightEntry> plan, int act_bits);

// Lays out the arena and converts every entry from its source tensor (shapes
// and dtypes already checked): vectors/scalars here, matrices in parallel
// panel-aligned chunks. Non-finite source values throw Error(model) naming the
// tensor and the flat index of the first one. Vectors get the config's
// norm_weight_offset added. Sets model.arena_/weight_type_.
void convert_weights(Model& model, std::vector<WeightEntry>& plan, const std::vector<const TensorView*>& src,
                     const LoadOptions& options);

// Model::load of a llama2.c .bin file (model/llama2c.cpp).
std::shared_ptr<const Model> load_llama2c(const std::filesystem::path& file, const LoadOptions& options);
// The tokenizer of a llama2.c file: tok<vocab>.model next to it (vocab from
// its header), or the tokenizer files of its directory.
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::filesystem::path& file, bool prefer_json);

// Throws Error(config) unless 0 <= threads <= max_threads(); `what` names the
// setting ("load options", "configuration").
void check_threads(int threads, const char* what);
// LoadOptions::act_bits: 8 or 16, else Error(config).
void check_act_bits(int act_bits);

// Model::load of a GGUF file (model/gguf_loader.cpp).
std::shared_ptr<const Model> load_gguf(const std::filesystem::path& file, const LoadOptions& options);

// Resolves a thread count: 0 means every CPU this process may use.
int resolve_threads(int threads);

// The loaders' conversion loop: body(ti, team, scratch) for every task ti in
// [0, n_tasks), handed out one at a time to n_threads (at most n_tasks; a
// fixed team: tasks block on file reads, which is no sign of a busy machine);
// `scratch` is one Scratch per thread, kept across its tasks. Tasks after a failed one are
// skipped, earlier ones still run, so the exception rethrown is the first in
// task order (the first bad tensor in file order, whatever the threads did).
template <class Scratch, class Body>
void run_tasks_in_order(int n_threads, long n_tasks, Body body) {
    std::atomic<long> first_error_task{n_tasks};
    std::mutex error_mutex;
    std::exception_ptr error;
    kernels::IndexQueue queue(n_tasks);
    kernels::parallel_fixed(int(std::min<long>(n_threads, n_tasks)), [&](const kernels::Team& team) {
        Scratch scratch{};
        for (long ti; queue.next(ti);) {
            if (ti > first_error_task.load(std::memory_order_relaxed)) continue;
            try {
                body(ti, team, scratch);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (ti < first_error_task.load(std::memory_order_relaxed)) {
                    first_error_task.store(ti, std::memory_order_relaxed);
                    error = std::current_exception();
                }
            }
        }
    });
    if (error) std::rethrow_exception(error);
}

// Rows per conversion task: a multiple of kPanelRows near `target_bytes` of source.
int chunk_rows(int k, size_t elem_bytes);

}  // namespace staticlm::detail
