// Loading tokenizers from model directories (the interface is public:
// include/staticlm/tokenizer.hpp).
#pragma once

#include <filesystem>
#include <memory>

#include "staticlm/tokenizer.hpp"

namespace staticlm {

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path& tokenizer_config);
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& json_file,
                                               const std::filesystem::path& tokenizer_config);

}  // namespace staticlm
