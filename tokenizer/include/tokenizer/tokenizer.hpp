// Loading tokenizers from model directories (the interface is public:
// include/staticlm/tokenizer.hpp).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "staticlm/tokenizer.hpp"

namespace staticlm {

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path& tokenizer_config);
// Throws Error(input) naming `what` and the byte offset of the first invalid
// UTF-8 sequence in `text` (overlong forms, surrogates and code points above
// U+10FFFF are invalid too). Every Tokenizer::encode calls it first.
void check_utf8(std::string_view text, const std::string& what);

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& json_file,
                                               const std::filesystem::path& tokenizer_config);

}  // namespace staticlm
