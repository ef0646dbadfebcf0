// SentencePiece tokenizer (tokenizer.model) through libsentencepiece, with the
// BOS/EOS settings of tokenizer_config.json. Decoding follows the library's own
// rules (byte-fallback pieces, the dropped leading space, control tokens).
#include "model/tokenizer.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "staticlm/error.hpp"

namespace staticlm {
namespace {

// What tokenizer_config.json says about special tokens; absent keys keep the defaults.
struct SpecialSettings {
    bool add_bos = true;
    bool add_eos = false;
    std::string bos_token;  // empty: use the model's bos id
    std::string eos_token;
};

std::string token_string(const nlohmann::json& v, const std::filesystem::path& file,
                         const char* key) {
    // Either "<s>" or an AddedToken object {"content": "<s>", ...}.
    if (v.is_null()) return {};
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string())
        return v["content"].get<std::string>();
    throw Error(ErrorKind::format, file.string() + ": \"" + key +
                                       "\" is neither a string nor {\"content\": string}");
}

bool flag(const nlohmann::json& cfg, const char* key, bool fallback,
          const std::filesystem::path& file) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return fallback;
    if (!it->is_boolean())
        throw Error(ErrorKind::format, file.string() + ": \"" + key + "\" is not a boolean");
    return it->get<bool>();
}

SpecialSettings read_special_settings(const std::filesystem::path& file) {
    SpecialSettings s;
    if (file.empty() || !std::filesystem::exists(file)) return s;  // optional file
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, "cannot read " + file.string());
    nlohmann::json cfg;
    try {
        cfg = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::format, file.string() + ": invalid JSON: " + e.what());
    }
    if (!cfg.is_object()) throw Error(ErrorKind::format, file.string() + ": not a JSON object");
    s.add_bos = flag(cfg, "add_bos_token", true, file);
    s.add_eos = flag(cfg, "add_eos_token", false, file);
    if (cfg.contains("bos_token")) s.bos_token = token_string(cfg["bos_token"], file, "bos_token");
    if (cfg.contains("eos_token")) s.eos_token = token_string(cfg["eos_token"], file, "eos_token");
    return s;
}

class SentencePieceTokenizer final : public Tokenizer {
public:
    SentencePieceTokenizer(const std::filesystem::path& model_file,
                           const std::filesystem::path& tokenizer_config)
        : file_(model_file.string()) {
        if (!std::filesystem::is_regular_file(model_file))
            throw Error(ErrorKind::io, "SentencePiece model not found: " + file_);
        const auto status = sp_.Load(file_);
        if (!status.ok())
            throw Error(ErrorKind::format,
                        file_ + ": not a SentencePiece model: " + status.ToString());
        const auto special = read_special_settings(tokenizer_config);
        add_bos_ = special.add_bos;
        add_eos_ = special.add_eos;
        bos_ = resolve(special.bos_token, sp_.bos_id(), tokenizer_config, "bos_token");
        eos_ = resolve(special.eos_token, sp_.eos_id(), tokenizer_config, "eos_token");
    }

    std::vector<int> encode(std::string_view text, bool add_special) const override {
        std::vector<int> ids;
        const auto status = sp_.Encode(text, &ids);
        if (!status.ok())
            throw Error(ErrorKind::input, file_ + ": cannot encode text: " + status.ToString());
        if (add_special && add_bos_ && bos_ >= 0) ids.insert(ids.begin(), bos_);
        if (add_special && add_eos_ && eos_ >= 0) ids.push_back(eos_);
        return ids;
    }

    std::string decode(const std::vector<int>& ids) const override {
        for (size_t i = 0; i < ids.size(); ++i) check_id(ids[i], i);
        std::string text;
        const auto status = sp_.Decode(ids, &text);
        if (!status.ok())
            throw Error(ErrorKind::input, file_ + ": cannot decode ids: " + status.ToString());
        return text;
    }

    int vocab_size() const override { return sp_.GetPieceSize(); }

    int token_id(std::string_view piece) const override {
        const int id = sp_.PieceToId(piece);
        // PieceToId answers unk_id for unknown pieces; only "<unk>" itself maps there.
        if (id < 0 || (id == sp_.unk_id() && sp_.IdToPiece(id) != piece)) return -1;
        return id;
    }

    std::string piece(int id) const override {
        check_id(id, 0);
        return sp_.IdToPiece(id);
    }

    int bos_id() const override { return bos_; }
    int eos_id() const override { return eos_; }

private:
    void check_id(int id, size_t index) const {
        if (id < 0 || id >= sp_.GetPieceSize())
            throw Error(ErrorKind::input, file_ + ": token id " + std::to_string(id) +
                                              " at index " + std::to_string(index) +
                                              " outside the vocabulary [0, " +
                                              std::to_string(sp_.GetPieceSize()) + ")");
    }

    int resolve(const std::string& token, int fallback, const std::filesystem::path& config,
                const char* key) const {
        if (token.empty()) return fallback;
        const int id = token_id(token);
        if (id < 0)
            throw Error(ErrorKind::format, config.string() + ": " + key + " \"" + token +
                                               "\" is not a piece of " + file_);
        return id;
    }

    sentencepiece::SentencePieceProcessor sp_;
    std::string file_;
    bool add_bos_ = true;
    bool add_eos_ = false;
    int bos_ = -1;
    int eos_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path& tokenizer_config) {
    return std::make_unique<SentencePieceTokenizer>(model_file, tokenizer_config);
}

}  // namespace staticlm
