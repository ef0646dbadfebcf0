// Loading tokenizers from model directories (the interface is public:
// include/staticlm/tokenizer.hpp).
#pragma once

#include <filesystem>
#include <memory>

#include "staticlm/tokenizer.hpp"

namespace staticlm {

// Loads the tokenizer of a model directory: tokenizer.model (SentencePiece)
// unless absent or prefer_json, else tokenizer.json. Throws Error naming the file.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir,
                                          bool prefer_json = false);
std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path& tokenizer_config);
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& json_file,
                                               const std::filesystem::path& tokenizer_config);

}  // namespace staticlm
