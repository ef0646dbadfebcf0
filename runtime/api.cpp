// The public model API (include/staticlm/model.hpp) over model/.
#include "kernels/kernels.hpp"
#include "model/model.hpp"
#include "model/synthetic.hpp"
#include "staticlm/model.hpp"

namespace staticlm {

std::shared_ptr<const Model> load_model(const std::filesystem::path& dir, const LoadOptions& options) {
    return Model::load(dir, options);
}

std::shared_ptr<const Model> synthetic_model(const std::string& name, WeightType weights,
                                             uint64_t seed, int threads) {
    return Model::synthetic(synthetic_config(name), weights, seed, threads);
}

std::vector<std::string> synthetic_model_names() { return synthetic_config_names(); }

const ModelConfig& model_config(const Model& model) { return model.config(); }
const Tokenizer* model_tokenizer(const Model& model) { return model.tokenizer(); }
WeightType model_weight_type(const Model& model) { return model.weight_type(); }
size_t model_weight_bytes(const Model& model) { return model.weight_bytes(); }
double model_load_seconds(const Model& model) { return model.load_seconds(); }

std::string kernel_target_name() { return kernels::target_name(kernels::best_target()); }

}  // namespace staticlm
