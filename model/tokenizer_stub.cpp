// TEMPORARY: stands in for load_tokenizer until the tokenizer branch is
// merged (delete this file and its meson line then). Throws, never aborts.
#include "model/tokenizer.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir, bool) {
    throw Error(ErrorKind::unsupported, model_dir.string() + ": no tokenizer implementation is built in");
}

}  // namespace staticlm

namespace staticlm {

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path&) {
    throw Error(ErrorKind::unsupported, model_file.string() + ": no tokenizer implementation is built in");
}

}  // namespace staticlm
