// Model::synthetic (deterministic random weights in the same arena layout as
// Model::load) and the built-in configs, written as config.json text so they
// go through the same parser and checks as real checkpoints.
#include "model/synthetic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "model/family.hpp"
#include "model/model.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {


uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Row `row` of entry `entry`: uniform in ±sqrt(3)/sqrt(k) (std 1/sqrt(fan_in)),
// a pure function of (seed, entry, row, col) so any thread order gives the
// same weights: a per-row 64-bit key, then kernels' uniform_row (a
// counter-based hash per element, vectorized per target).
void fill_row(uint64_t seed, size_t entry, int row, int k, float* out) {
    const uint64_t key = splitmix64(seed ^ splitmix64((uint64_t(entry) << 32) | uint32_t(row)));
    kernels::table().uniform_row(key, k, std::sqrt(3.0f / float(std::max(k, 1))), out);
}

}  // namespace

std::vector<std::string> builtin_config_names() {
    std::vector<std::string> names;
    for (const FamilyDescriptor* f : families())
        for (const SyntheticShape& shape : f->synthetic) names.emplace_back(shape.name);
    return names;
}

ModelConfig builtin_config(const std::string& name) {
    // Each family carries its shapes (FamilyDescriptor::synthetic).
    for (const FamilyDescriptor* f : families())
        for (const SyntheticShape& shape : f->synthetic)
            if (shape.name == name) return parse_model_config(std::string(shape.config_json), "builtin:" + name);
    std::string known;
    for (const std::string& n : builtin_config_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::config, "unknown built-in model '" + name + "' (known: " + known + ")");
}

std::shared_ptr<const Model> Model::synthetic(const ModelConfig& config, WeightType weights, uint64_t seed,
                                              int threads, int act_bits) {
    detail::check_act_bits(act_bits);
    const auto t_start = std::chrono::steady_clock::now();
    auto model = std::make_shared<Model>();
    model->config_ = config;
    model->weight_type_ = weights;
    std::vector<WeightEntry> plan = detail::plan_weights(model->config_, model->weights_, detail::TensorNaming{});
    model->arena_ = detail::layout_arena(plan, weights);

    struct Task {
        size_t entry;
        int n0, n1;
    };
    std::vector<Task> tasks;
    for (size_t i = 0; i < plan.size(); ++i) {
        WeightEntry& e = plan[i];
        if (e.kind == WeightEntry::Kind::scalar) {
            *e.scalar = 1.0f;
        } else if (e.kind == WeightEntry::Kind::vector) {
            std::fill_n(const_cast<float*>(*e.vector), e.n, e.norm ? 1.0f : 0.0f);  // norms 1, biases 0
        } else {
            const int rows = detail::chunk_rows(e.k, sizeof(float));
            for (int n0 = 0; n0 < e.n; n0 += rows) tasks.push_back({i, n0, std::min(e.n, n0 + rows)});
        }
    }
    detail::check_threads(threads, "load options");
    const int n_threads = detail::resolve_threads(threads);
    const long n_tasks = long(tasks.size());
    // Each task packs its rows as a sub-matrix into its panels: every layout
    // of kernels/formats/ is panel-major, so rows [n0, n1) with n0 % 16 == 0 start
    // at panel n0/16. Checked once here against packed_bytes.
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        if (e.kind != WeightEntry::Kind::matrix) continue;
        const size_t panel = kernels::packed_bytes(e.matrix->type, kernels::kPanelRows, e.k);
        const size_t n_panels = size_t(e.n + kernels::kPanelRows - 1) / kernels::kPanelRows;
        if (panel * n_panels != e.bytes)
            throw Error(ErrorKind::model, "packed layout of " + e.name + " is not panel-major");
    }
    // One panel of rows at a time: the f32 rows ([16][k], at most 512 KiB)
    // are packed while still in L2, and each arena page is written once.
    using Rows = std::vector<float>;
    detail::run_tasks_in_order<Rows>(n_threads, n_tasks, [&](long ti, const kernels::Team&, Rows& buf) {
        const Task& task = tasks[size_t(ti)];
        const WeightEntry& e = plan[task.entry];
        buf.resize(size_t(kernels::kPanelRows) * size_t(e.k));
        const size_t panel = kernels::packed_bytes(e.matrix->type, kernels::kPanelRows, e.k);
        for (int p0 = task.n0; p0 < task.n1; p0 += kernels::kPanelRows) {
            const int rows = std::min(kernels::kPanelRows, task.n1 - p0);
            for (int r = 0; r < rows; ++r)
                fill_row(seed, task.entry, p0 + r, e.k, buf.data() + size_t(r) * size_t(e.k));
            std::byte* dst = e.matrix->data + size_t(p0 / kernels::kPanelRows) * panel;
            kernels::pack_weights(e.matrix->type, SrcType::f32, buf.data(), rows, e.k, 0, rows, dst);
        }
    });
    detail::finish_weights(*model, std::move(plan), act_bits);
    model->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return model;
}

}  // namespace staticlm
