// SentencePiece tokenizer (tokenizer.model) through libsentencepiece, with the
// BOS/EOS settings of tokenizer_config.json. Decoding follows the library's own
// rules (byte-fallback pieces, the dropped leading space, control tokens).
#include <sentencepiece_processor.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/file.hpp"
#include "base/json.hpp"
#include "staticlm/error.hpp"
#include "tokenizer/sp_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace staticlm {
namespace {

// What tokenizer_config.json says about special tokens; absent keys keep the defaults.
struct SpecialSettings {
    bool add_bos = true;
    bool add_eos = false;
    std::string bos_token;  // empty: use the model's bos id
    std::string eos_token;
};

std::string token_string(const JsonAt& cfg, const char* key) {
    // Either "<s>" or an AddedToken object {"content": "<s>", ...}.
    const nlohmann::json* v = cfg.find(key);
    if (!v) return {};
    if (v->is_string()) return v->get<std::string>();
    if (v->is_object() && v->contains("content") && (*v)["content"].is_string())
        return (*v)["content"].get<std::string>();
    throw Error(ErrorKind::format,
                cfg.file + ": \"" + key + "\" is neither a string nor {\"content\": string}");
}

bool flag(const JsonAt& cfg, const char* key, bool fallback) {
    const nlohmann::json* v = cfg.find(key);
    if (!v) return fallback;
    if (!v->is_boolean())
        throw Error(ErrorKind::format, cfg.file + ": \"" + key + "\" is not a boolean");
    return v->get<bool>();
}

SpecialSettings read_special_settings(const std::filesystem::path& file) {
    SpecialSettings s;
    if (file.empty()) return s;
    const std::optional<File> f = File::open_if_exists(file);  // optional file
    if (!f) return s;
    const std::string name = file.string();
    const nlohmann::json cfg = parse_json(f->read_all(kMaxConfigFileBytes, "a JSON config"), name);
    if (!cfg.is_object()) throw Error(ErrorKind::format, name + ": not a JSON object");
    const JsonAt c{cfg, "", name};
    s.add_bos = flag(c, "add_bos_token", true);
    s.add_eos = flag(c, "add_eos_token", false);
    s.bos_token = token_string(c, "bos_token");
    s.eos_token = token_string(c, "eos_token");
    return s;
}

class SentencePieceTokenizer final : public Tokenizer {
public:
    SentencePieceTokenizer(const std::filesystem::path& model_file,
                           const std::filesystem::path& tokenizer_config)
        : file_(model_file.string()) {
        const std::string proto =
            File(model_file).read_all(kMaxTokenizerFileBytes, "a tokenizer.model");
        const SpModelFacts facts = check_sentencepiece_model(proto, file_);
        const auto status = sp_.LoadFromSerializedProto(proto);
        if (!status.ok())
            throw Error(ErrorKind::format,
                        file_ + ": not a SentencePiece model: " + status.ToString());
        const auto special = read_special_settings(tokenizer_config);
        add_bos_ = special.add_bos;
        add_eos_ = special.add_eos;
        bos_ = resolve(special.bos_token, sp_.bos_id(), tokenizer_config, "bos_token");
        eos_ = resolve(special.eos_token, sp_.eos_id(), tokenizer_config, "eos_token");
        init_chunking(facts);
    }

    std::vector<int> encode(std::string_view text, bool add_special) const override {
        check_utf8(text, file_);  // the library would silently replace invalid bytes
        std::vector<int> ids;
        const auto status = sp_.Encode(text, &ids);
        if (!status.ok())
            throw Error(ErrorKind::input, file_ + ": cannot encode text: " + status.ToString());
        if (add_special && add_bos_ && bos_ >= 0) ids.insert(ids.begin(), bos_);
        if (add_special && add_eos_ && eos_ >= 0) ids.push_back(eos_);
        return ids;
    }

protected:
    std::vector<int> encode_in_chunks(std::string_view text, bool add_special, size_t max_tokens,
                                      size_t chunk_bytes) const override {
        check_utf8(text, file_);
        return encode_chunks(
            text, max_tokens, chunk_bytes, chunk_,
            [&](std::string_view chunk, bool first, bool last, std::vector<int>& out) {
                std::vector<int> ids;
                const auto status = sp_.Encode(chunk, &ids);
                if (!status.ok())
                    throw Error(ErrorKind::input,
                                file_ + ": cannot encode text: " + status.ToString());
                if (first && add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
                out.insert(out.end(), ids.begin(), ids.end());
                if (last && add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
            });
    }

public:
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

    // Cuts are exact when every piece boundary falls at each "letter ▁ letter"
    // of the normalized text: a BPE model (merges are local; a unigram model's
    // Viterbi sums could round differently), spaces escaped as ▁ and not
    // attached as suffixes, a charsmap that leaves ASCII alone, no piece with
    // a raw space, "▁" a piece, and the letter before a cut never followed by
    // ▁ inside a piece. The space at a cut is re-created by the dummy prefix
    // (or kept at the chunk's start when extra whitespace is kept).
    void init_chunking(const SpModelFacts& f) {
        if (!f.bpe || !f.escape_whitespaces || f.treat_whitespace_as_suffix ||
            f.charsmap_touches_ascii)
            return;
        if (f.add_dummy_prefix)
            chunk_.drop_space = true;
        else if (!f.remove_extra_whitespaces)
            chunk_.drop_space = false;
        else
            return;
        constexpr std::string_view kSpace = "\xE2\x96\x81";
        // "▁" and the letter before a cut must be pieces the model encodes
        // as themselves (normal or user-defined; an unknown, control or
        // unused piece of that text does not keep it a symbol of its own).
        bool have_space = false;
        std::array<bool, 256> letter_piece{};
        for (size_t i = 0; i < f.pieces.size(); ++i) {
            const std::string_view p = f.pieces[i];
            if (p.find(' ') != std::string_view::npos) return;
            const bool usable = f.piece_types[i] == kSpPieceNormal || f.piece_types[i] == kSpPieceUserDefined;
            have_space |= p == kSpace && usable;
            if (p.size() == 1 && usable) letter_piece[static_cast<unsigned char>(p[0])] = true;
            chunk_.forbid_before(p, kSpace);
        }
        if (!have_space) return;
        for (char c = 'A'; c <= 'z'; ++c)
            if (!letter_piece[static_cast<unsigned char>(c)]) chunk_.bad_before[static_cast<unsigned char>(c)] = true;
        chunk_.enabled = true;
    }

    sentencepiece::SentencePieceProcessor sp_;
    ChunkRule chunk_;
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
