// Chat templates as code (Llama 3, Gemma 4, plain) and the incremental chat:
// turn n appends [pending token] + end-of-turn (if the reply did not end with
// it) + the user turn + the assistant header, never re-encoding history.
#include "staticlm/chat.hpp"

#include <nlohmann/json.hpp>

#include "base/file.hpp"
#include "base/json.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

namespace {

std::string_view trim(std::string_view s) {
    const char* ws = " \t\n\r";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string llama3_header(std::string_view role) {
    return "<|start_header_id|>" + std::string(role) + "<|end_header_id|>\n\n";
}

std::string llama3_system(const ChatOptions& o) {
    return llama3_header("system") + "Cutting Knowledge Date: December 2023\nToday Date: " + o.date +
           "\n\n" + std::string(trim(o.system)) + "<|eot_id|>";
}

std::string gemma4_turn(std::string_view role, std::string_view content) {
    return "<|turn>" + std::string(role) + "\n" + std::string(trim(content)) + "<turn|>\n";
}

// Text that opens a conversation (before the first user turn).
std::string opening(ChatFormat f, const ChatOptions& o) {
    switch (f) {
        case ChatFormat::llama3: return "<|begin_of_text|>" + llama3_system(o);
        case ChatFormat::gemma4:
            return "<bos>" + (o.system.empty() ? std::string() : gemma4_turn("system", o.system));
        case ChatFormat::plain: return o.system.empty() ? std::string() : o.system + "\n\n";
    }
    return {};
}

std::string user_turn(ChatFormat f, std::string_view content) {
    switch (f) {
        case ChatFormat::llama3:
            return llama3_header("user") + std::string(trim(content)) + "<|eot_id|>";
        case ChatFormat::gemma4: return gemma4_turn("user", content);
        case ChatFormat::plain: return std::string(content);
    }
    return {};
}

// What opens an assistant turn of the history.
std::string assistant_header(ChatFormat f) {
    switch (f) {
        case ChatFormat::llama3: return llama3_header("assistant");
        case ChatFormat::gemma4: return "<|turn>model\n";
        case ChatFormat::plain: return "";
    }
    return {};
}

// What add_generation_prompt appends. Gemma 4 (thinking off, the template's
// default) opens the model turn with an empty thought channel; history turns
// are rendered without it (the template strips thinking from them).
std::string generation_prompt(ChatFormat f) {
    if (f == ChatFormat::gemma4) return assistant_header(f) + "<|channel>thought\n<channel|>";
    return assistant_header(f);
}

// What closes an assistant turn, and what follows its end-of-turn token.
std::string end_of_turn(ChatFormat f) {
    switch (f) {
        case ChatFormat::llama3: return "<|eot_id|>";
        case ChatFormat::gemma4: return "<turn|>";
        case ChatFormat::plain: return "";
    }
    return {};
}
std::string after_turn(ChatFormat f) { return f == ChatFormat::llama3 ? "" : "\n"; }

}  // namespace

const char* chat_format_name(ChatFormat format) {
    switch (format) {
        case ChatFormat::plain: return "plain";
        case ChatFormat::llama3: return "llama3";
        case ChatFormat::gemma4: return "gemma4";
    }
    return "?";
}

ChatFormat chat_format_from_template(std::string_view t) {
    if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::llama3;
    if (t.find("<|turn>") != std::string_view::npos) return ChatFormat::gemma4;
    return ChatFormat::plain;
}

ChatFormat detect_chat_format(const std::filesystem::path& dir) {
    // Files as every reader opens them: inside the directory, regular, limited.
    std::string text;
    if (const auto jinja = model_file(dir, "chat_template.jinja")) {
        text = File(*jinja).read_all(kMaxConfigFileBytes, "a chat template");
    } else if (const auto cfg = model_file(dir, "tokenizer_config.json")) {
        const nlohmann::json j =
            parse_json(File(*cfg).read_all(kMaxConfigFileBytes, "a JSON config"), cfg->string());
        if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
            text = j["chat_template"].get<std::string>();
    }
    return chat_format_from_template(text);
}

std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options, bool add_generation_prompt) {
    ChatOptions o = options;
    size_t first = 0;
    if (!messages.empty() && messages[0].role == "system") {
        o.system = messages[0].content;
        first = 1;
    }
    std::string out = opening(f, o);
    for (size_t i = first; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
            if (f == ChatFormat::plain && i > first) out += "\n";
            out += user_turn(f, m.content);
        } else if (m.role == "assistant") {
            out += assistant_header(f) + std::string(f == ChatFormat::plain ? m.content : trim(m.content)) +
                   end_of_turn(f) + after_turn(f);
            if (f == ChatFormat::plain) out.pop_back();  // the "\n" comes with the next user turn
        } else {
            throw Error(ErrorKind::input, "unknown chat role '" + m.role + "' in message " +
                                              std::to_string(i));
        }
    }
    if (add_generation_prompt) out += generation_prompt(f);
    return out;
}

Chat::Chat(Session& session, const Tokenizer& tokenizer, ChatFormat format, ChatOptions options)
    : session_(session), tokenizer_(tokenizer), format_(format), options_(std::move(options)) {}

std::vector<int> Chat::turn_ids(std::string_view user) const {
    std::vector<int> ids;
    std::string text;
    if (cached_.empty() && pending_ < 0) {
        if (format_ == ChatFormat::plain && session_.model().config().add_bos &&
            tokenizer_.bos_id() >= 0)
            ids.push_back(tokenizer_.bos_id());
        text = opening(format_, options_);
    } else {
        if (pending_ >= 0) ids.push_back(pending_);
        if (!pending_ends_turn_) text += end_of_turn(format_);
        text += after_turn(format_);
    }
    text += user_turn(format_, user) + generation_prompt(format_);
    const std::vector<int> encoded = tokenizer_.encode(text, /*add_special=*/false);
    ids.insert(ids.end(), encoded.begin(), encoded.end());
    return ids;
}

GenerateResult Chat::reply(std::string_view user, const GenerateOptions& options, TextSink sink) {
    const std::vector<int> ids = turn_ids(user);
    if (session_.pos() + int(ids.size()) > session_.max_seq())
        throw Error(ErrorKind::capacity,
                    "this turn does not fit: " + std::to_string(session_.pos()) + " tokens in the cache + " +
                        std::to_string(ids.size()) + " new > max_seq " +
                        std::to_string(session_.max_seq()) + " (start a new chat or raise --max-seq)");
    GenerateOptions o = options;
    GenerateResult r = generate(session_, &tokenizer_, ids, o, sink);
    cached_.insert(cached_.end(), ids.begin(), ids.end());
    if (!r.tokens.empty()) {
        cached_.insert(cached_.end(), r.tokens.begin(), r.tokens.end() - 1);
        pending_ = r.tokens.back();
        pending_ends_turn_ = r.reason == StopReason::eos;
    } else {
        pending_ = -1;
        pending_ends_turn_ = false;
    }
    history_.push_back({"user", std::string(user)});
    history_.push_back({"assistant", r.text});
    return r;
}

}  // namespace staticlm
