// Checking the engine against a reference (RUNTIME.md "Reference metrics"):
// teacher-forced logits, greedy token accuracy, the multi-turn split check,
// per-layer dumps of named intermediates, and perplexity. The CLI
// (`staticlm verify`, `staticlm perplexity`) only prints what these return.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "staticlm/metrics.hpp"
#include "staticlm/session.hpp"
#include "staticlm/types.hpp"

namespace staticlm {

// The golden fixtures' reference.safetensors: input_ids I64 [T], logits F32
// [T][V] (row t predicts the token after input_ids[t]), optional greedy_ids
// I64 [G] continuing input_ids. Extra tensors are ignored.
struct ReferenceData {
    std::vector<int> input_ids;   // [T]
    std::vector<float> logits;    // [T][vocab]
    std::vector<int> greedy_ids;  // [G], empty when the file has none
    int vocab = 0;

    int length() const { return int(input_ids.size()); }
    std::span<const float> row(int t) const {
        return {logits.data() + size_t(t) * size_t(vocab), size_t(vocab)};
    }
};

// Throws Error(io/format/model) naming the file and tensor on a bad file.
ReferenceData read_reference(const std::filesystem::path& file);

// Session settings of the checks. Buckets left empty mean "one block for the
// whole prompt"; the KV type defaults to f32 so that f32 weights can meet
// the 0.01% budget.
struct VerifySettings {
    int threads = 0;
    KvType kv = KvType::f32;
    std::vector<int> prefill_buckets;
    std::vector<int> append_buckets;
};

struct GreedyCheck {
    int compared = 0;
    int matched = 0;
    int first_mismatch = -1;    // index into greedy_ids, -1 when all match
    std::vector<int> engine_ids;  // the engine's argmax at each compared step
    double accuracy() const { return compared ? double(matched) / compared : 1.0; }
};

struct VerifyReport {
    std::vector<LogitDiff> positions;  // [T]: engine vs reference logits row t
    GreedyCheck greedy;
    double worst_peir() const;
    int worst_position() const;  // -1 when there are no positions
    double mean_abs() const;     // mean of the per-position mean|diff|
    double max_abs() const;
    double top1_fraction() const;
};

// Teacher-forced check: one prefill of input_ids with every row's logits,
// then the greedy ids fed one by one as decode steps (teacher-forced: step
// g sees input_ids + greedy_ids[0..g-1]) comparing the engine's argmax with
// greedy_ids[g]. Before the first mismatch this is exactly the engine's own
// greedy run; after it, accuracy still counts independent single steps.
VerifyReport verify_reference(std::shared_ptr<const Model> model, const ReferenceData& ref,
                              const VerifySettings& settings);

// Multi-turn: prefill input_ids[0..turn1), decode `decode` tokens one by one
// (the reference's next ids), append the next `turn2` tokens as one call with
// append_buckets = {append_bucket} (chunked when turn2 > bucket), decode
// `decode` more. turn2 = -1 takes the rest. Every position's logits are
// compared with the reference; the append's rows are also compared with a
// second session that decodes the same tokens one at a time.
struct MultiTurnOptions {
    int turn1 = -1;  // -1: T / 3
    int decode = 4;
    int turn2 = -1;
    int append_bucket = 8;
};

struct MultiTurnRow {
    const char* phase = "";  // "prefill", "decode1", "append", "decode2"
    int pos = 0;
    LogitDiff diff;
};

struct MultiTurnReport {
    int turn1 = 0, decode = 0, turn2 = 0;
    std::vector<MultiTurnRow> rows;  // in position order
    std::vector<Step> append_plan;   // the steps the append ran
    double append_vs_decode_peir = 0;  // worst over the append's rows
    int append_vs_decode_worst_pos = -1;
    double worst_peir() const;
    double top1_fraction() const;
};

MultiTurnReport verify_multi_turn(std::shared_ptr<const Model> model, const ReferenceData& ref,
                                  const VerifySettings& settings, const MultiTurnOptions& options);

// One named intermediate of forward() (names of model/graph.cpp), rows
// concatenated over the steps of a prefill.
struct DumpedTensor {
    std::string name;
    int layer = -1;  // -1: model-level (embed, per_layer_inputs, final_norm, logits)
    int rows = 0;
    int cols = 0;
    std::string file;  // relative to the dump directory
};

// Teacher-forced prefill of tokens with a dump callback; writes every
// intermediate to dir/<name>.<layer>.f32 (dir/<name>.f32 for layer -1) as
// raw little-endian float32 [rows][cols], and dir/index.json listing them in
// the order forward() produced them. Creates dir.
std::vector<DumpedTensor> dump_intermediates(std::shared_ptr<const Model> model,
                                             std::span<const int> tokens,
                                             const std::filesystem::path& dir,
                                             const VerifySettings& settings);

// Teacher-forced perplexity: tokens are cut into consecutive windows of ctx
// tokens (the last may be shorter); each window is one prefill (fresh
// context) and every token but the window's first is scored with the
// log-softmax (in double) of the previous row's logits.
struct PerplexityResult {
    int tokens = 0;
    int scored = 0;
    int windows = 0;
    double total_nll = 0;
    double mean_nll() const { return scored ? total_nll / scored : 0.0; }
    double perplexity() const;
};

PerplexityResult perplexity(std::shared_ptr<const Model> model, std::span<const int> tokens,
                            int ctx, const VerifySettings& settings);

}  // namespace staticlm
