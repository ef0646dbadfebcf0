// Built-in model configs of real shapes (for synthetic benchmarks and tests)
// used with Model::synthetic; the shapes are declared by the family
// descriptors (FamilyDescriptor::synthetic, e.g. llama-3.2-1b, qwen3-0.6b).
#pragma once

#include <string>
#include <vector>

#include "model/config.hpp"

namespace staticlm {

// Throws Error(config) listing the known names when `name` is unknown.
ModelConfig builtin_config(const std::string& name);
std::vector<std::string> builtin_config_names();

}  // namespace staticlm
