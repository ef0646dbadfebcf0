// Model::load of a GGUF file: the family named by general.architecture reads
// the metadata, the shared weight plan names every tensor (gguf_tensor_name),
// and each matrix is dequantized by row chunks into per-thread scratch and
// packed to the chosen weight type in parallel (never a whole-file f32 copy);
// where the chosen format holds the tensor's GGML type exactly (its
// GgufIngest hook, kernels/formats/format.hpp), the blocks are read and
// repacked without rounding instead.
// The tokenizer is built from the tokenizer.ggml.* keys on a thread of its
// own meanwhile.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "kernels/formats/format.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"

namespace staticlm::detail {

namespace {

const FamilyDescriptor& gguf_family(const GgufFile& f) {
    const std::string_view arch = f.get_string("general.architecture");
    if (const FamilyDescriptor* family = find_gguf_family(arch)) return *family;
    throw Error(ErrorKind::unsupported, f.key_where("general.architecture") + ": architecture '" + std::string(arch) +
                                            "' is not supported (" + gguf_architectures_known() + " are)");
}

// The source tensor's rows: the matrix's own, or a fused tensor's (RowSource).
int64_t tensor_rows(const WeightEntry& e) { return e.rows.tensor_rows ? e.rows.tensor_rows : e.n; }

std::string ggml_shape(const WeightEntry& e) {
    if (e.kind == WeightEntry::Kind::matrix)
        return "[" + std::to_string(e.k) + ", " + std::to_string(tensor_rows(e)) + "]";
    return "[" + std::to_string(e.n) + "]";
}

// GGUF dims are in ggml order: an [n][k] matrix is ne = {k, n}.
bool shape_matches(const WeightEntry& e, const GgufTensor& t) {
    switch (e.kind) {
        case WeightEntry::Kind::matrix: return t.n_dims == 2 && t.ne[0] == e.k && t.ne[1] == tensor_rows(e);
        case WeightEntry::Kind::vector: return t.n_dims == 1 && t.ne[0] == e.n;
        case WeightEntry::Kind::scalar: return t.numel == 1;
    }
    return false;
}

// Index of the first non-finite float of x[0, n), or -1 (OR-reduced so the
// common all-finite case vectorizes).
int64_t first_non_finite(const float* x, size_t n) {
    uint32_t hit = 0;
    for (size_t i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, x + i, 4);
        hit |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
    }
    if (!hit) return -1;
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) return int64_t(i);
    return -1;
}

[[noreturn]] void throw_non_finite(const GgufTensor& t, int64_t index) {
    throw Error(ErrorKind::model, "non-finite value (inf or NaN) at flat index " + std::to_string(index) + " of " +
                                      t.where());
}

void warn_unused(const GgufFile& f, const std::vector<WeightEntry>& plan, const ModelConfig& c,
                 std::vector<std::string>& warnings) {
    constexpr size_t kMaxListed = 10;
    std::set<std::string_view> used;
    for (const WeightEntry& e : plan) used.insert(e.name);
    for (const char* read : {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"})
        used.insert(read);  // read by the family's parse_gguf
    size_t unused = 0;
    for (const GgufTensor& t : f.tensors()) {
        if (used.count(t.name)) continue;
        if (unused++ < kMaxListed) warnings.push_back(t.where() + " is not used by this " + c.architecture + " model");
    }
    if (unused > kMaxListed)
        warnings.push_back("... and " + std::to_string(unused - kMaxListed) + " more unused tensors in " +
                           f.path().string());
}

struct Task {
    size_t entry;
    int n0, n1;
};

}  // namespace

std::shared_ptr<const Model> load_gguf(const std::filesystem::path& path, const LoadOptions& options) {
    const auto t_start = std::chrono::steady_clock::now();
    const GgufFile f(path);
    const FamilyDescriptor& family = gguf_family(f);

    auto model = std::make_shared<Model>();
    ModelConfig& c = model->config_;
    c = family.parse_gguf(f);
    c.architecture = std::string(f.get_string("general.architecture"));
    c.family = std::string(family.name);
    c.tie_embeddings = !f.find_tensor("output.weight");
    for (size_t il = 0; il < c.layers.size(); ++il)
        for (const std::vector<float>* set : {&c.layers[il].inv_freq, &c.layers[il].inv_freq_long})
            for (float x : *set)
                if (!std::isfinite(x) || x < 0)
                throw Error(ErrorKind::format, path.string() + ": the RoPE parameters give layer " +
                                                   std::to_string(il) + " a non-finite or negative frequency");

    const TensorNaming names{gguf_tensor_name, {}};
    std::vector<WeightEntry> plan = plan_weights(c, model->weights_, names);
    std::vector<const GgufTensor*> src(plan.size());
    uint64_t total_bytes = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        const GgufTensor* t = f.find_tensor(e.name);
        if (!t)
            throw Error(ErrorKind::model, path.string() + ": missing tensor '" + e.name + "' (expected " +
                                              ggml_shape(e) + ")");
        if (!shape_matches(e, *t))
            throw Error(ErrorKind::model, "wrong shape of " + t->where() + ": expected " + ggml_shape(e) + ", got " +
                                              t->shape_string());
        const kernels::GgmlTypeInfo* ti = kernels::ggml_type_info(t->type);
        if (!ti || !ti->dequantizable) gguf_dequantize_rows(*t, 0, 0, nullptr);  // throws unsupported, naming it
        src[i] = t;
        // A fused tensor counts once per matrix it holds, by its rows.
        total_bytes += e.kind == WeightEntry::Kind::matrix ? uint64_t(e.n) * t->row_bytes() : t->bytes;
    }
    warn_unused(f, plan, c, model->warnings_);

    // The tokenizer on a thread of its own while the weights convert.
    std::unique_ptr<Tokenizer> tokenizer;
    std::exception_ptr tokenizer_error;
    std::thread tokenizer_thread;
    if (options.load_tokenizer)
        tokenizer_thread = std::thread([&] {
            try {
                tokenizer = load_gguf_tokenizer(f);
            } catch (...) {
                tokenizer_error = std::current_exception();
            }
        });
    struct Join {
        std::thread& t;
        ~Join() {
            if (t.joinable()) t.join();
        }
    } join{tokenizer_thread};

    const WeightType type = options.weights;
    model->weight_type_ = type;
    model->native_weights_ = options.native_weights;
    std::vector<WeightType> native(plan.size(), type);
    if (options.native_weights)
        for (size_t i = 0; i < plan.size(); ++i)
            if (plan[i].kind == WeightEntry::Kind::matrix) native[i] = kernels::gguf_native_type(src[i]->type);
    model->arena_ = layout_arena(plan, type, options.native_weights ? &native : nullptr);
    uint64_t small_bytes = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        if (e.kind == WeightEntry::Kind::matrix) continue;
        const GgufTensor& t = *src[i];
        const std::vector<float> v = gguf_read_f32(t);
        if (const int64_t bad = first_non_finite(v.data(), v.size()); bad >= 0) throw_non_finite(t, bad);
        small_bytes += t.bytes;
        if (e.kind == WeightEntry::Kind::scalar) {
            *e.scalar = v[0];
        } else {
            float* dst = const_cast<float*>(*e.vector);
            const float offset = e.norm ? c.norm_weight_offset : 0.0f;
            for (size_t j = 0; j < v.size(); ++j) dst[j] = v[j] + offset;
        }
    }

    std::vector<Task> tasks;
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        if (e.kind != WeightEntry::Kind::matrix) continue;
        const int rows = chunk_rows(e.k, sizeof(float));
        for (int n0 = 0; n0 < e.n; n0 += rows) tasks.push_back({i, n0, std::min(e.n, n0 + rows)});
    }
    std::atomic<uint64_t> done{small_bytes};
    const int n_threads = resolve_threads(options.threads);
    const long n_tasks = long(tasks.size());

    // Per thread: decoded f32 rows, or the format's ingestion scratch.
    struct Scratch {
        std::vector<float> f32;
        std::vector<std::byte> blocks;
    };
    run_tasks_in_order<Scratch>(n_threads, n_tasks, [&](long ti, const kernels::Team& team, Scratch& buf) {
        const Task& task = tasks[size_t(ti)];
        const WeightEntry& e = plan[task.entry];
        const GgufTensor& t = *src[task.entry];
        const bool interleaved =
            family.gguf_qk_interleaved && (e.role == WeightRole::q || e.role == WeightRole::k);
        const bool per_row = interleaved || e.rows.permuted();
        const int head_dim = e.layer >= 0 ? c.layers[size_t(e.layer)].head_dim : 0;
        // Blocks the matrix's format holds as they are, or nullptr: f32 rows.
        const kernels::GgufIngest* ingest = kernels::gguf_ingest(e.matrix->type, t.type);
        // ~128 KiB of f32 at a time: packed from L2 right after decoding.
        const size_t row_floats = size_t(e.k);
        const int step = std::max<int>(
            kernels::kPanelRows,
            int((size_t{128} << 10) / (row_floats * sizeof(float))) / kernels::kPanelRows * kernels::kPanelRows);
        const int rows_max = std::min(step, task.n1 - task.n0);
        if (ingest)
            buf.blocks.resize(ingest->scratch_bytes(rows_max, e.k));
        else
            buf.f32.resize(size_t(rows_max) * row_floats);
        for (int r0 = task.n0; r0 < task.n1; r0 += step) {
            const int r1 = std::min(task.n1, r0 + step);
            // Consecutive runs of GGUF rows: the whole step, or one row at
            // a time where the q/k rows are interleaved or permuted. Row r of
            // the matrix is Hugging Face row source(r) of its part of the tensor.
            for (int r = r0; r < r1; r = per_row ? r + 1 : r1) {
                const int64_t hf = e.rows.source(r);
                const int64_t g = e.rows.row0 + (interleaved ? gguf_llama_qk_row(hf, head_dim) : hf);
                const int count = per_row ? 1 : r1 - r0;
                const std::byte* blocks = t.data + size_t(g) * t.row_bytes();
                if (ingest) {
                    const int64_t bad =
                        ingest->read(t.type, blocks, e.k, r - r0, count, rows_max, buf.blocks.data());
                    if (bad >= 0) throw_non_finite(t, g * e.k + bad);
                } else {
                    float* rows = buf.f32.data() + size_t(r - r0) * row_floats;
                    gguf_dequantize_rows(t, g, g + count, rows);
                    if (const int64_t bad = first_non_finite(rows, size_t(count) * row_floats); bad >= 0)
                        throw_non_finite(t, g * e.k + bad);
                }
            }
            if (ingest)
                ingest->pack(buf.blocks.data(), rows_max, e.n, e.k, r0, r1, e.matrix->data);
            else
                kernels::pack_weight_rows(e.matrix->type, SrcType::f32, buf.f32.data(), e.n, e.k, r0, r1,
                                          e.matrix->data);
        }
        const uint64_t bytes = uint64_t(task.n1 - task.n0) * t.row_bytes();
        const uint64_t now = done.fetch_add(bytes) + bytes;
        if (team.tid() == 0 && options.progress) options.progress(now, total_bytes);
    });
    if (options.progress) options.progress(total_bytes, total_bytes);

    finish_weights(*model, std::move(plan), options.act_bits);
    if (tokenizer_thread.joinable()) tokenizer_thread.join();
    if (tokenizer_error) std::rethrow_exception(tokenizer_error);
    model->tokenizer_ = std::move(tokenizer);
    model->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return model;
}

}  // namespace staticlm::detail
