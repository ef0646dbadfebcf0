// A build without SentencePiece (-Dsentencepiece=disabled): tokenizer.model
// files are refused with an error saying so; tokenizer.json models work.
#include "staticlm/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace staticlm {

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path&) {
    throw Error(ErrorKind::unsupported,
                model_file.string() +
                    ": this staticlm was built without SentencePiece (-Dsentencepiece=disabled), so "
                    "tokenizer.model files cannot be read; use a model with tokenizer.json or rebuild "
                    "with libsentencepiece-dev installed");
}

}  // namespace staticlm
