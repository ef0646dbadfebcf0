// The chat renderer: one algorithm over the templates that model families
// declare as data (model/families/*.cpp, staticlm/chat_template.hpp), and the
// incremental chat: turn n appends [pending token] + end-of-turn (if the reply
// did not end with it) + the user turn + the generation prompt, never
// re-encoding history.
#include "staticlm/chat.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/file.hpp"
#include "base/json.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

const ChatFormat ChatFormat::plain{};
const ChatFormat ChatFormat::llama3{kLlama3Chat};
const ChatFormat ChatFormat::gemma4{kGemma4Chat};

const ChatTemplate& ChatFormat::chat_template() const { return template_ ? *template_ : kPlainChat; }

namespace {

std::string_view trim(std::string_view s) {
    const char* ws = " \t\n\r";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string_view content_of(const ChatTemplate& t, std::string_view content) {
    return t.trim ? trim(content) : content;
}

// `text` with {content}, {date} and {system} replaced (placeholders inside
// the replacements themselves are left alone).
std::string expand(std::string_view text, std::string_view content, std::string_view date = {},
                   std::string_view system = {}) {
    std::string out;
    out.reserve(text.size() + content.size() + system.size());
    for (size_t i = 0; i < text.size();) {
        if (text.compare(i, 9, "{content}") == 0) {
            out += content;
            i += 9;
        } else if (text.compare(i, 6, "{date}") == 0) {
            out += date;
            i += 6;
        } else if (text.compare(i, 8, "{system}") == 0) {
            out += system;
            i += 8;
        } else {
            out += text[i++];
        }
    }
    return out;
}

// Text that opens a conversation (before the first user turn).
std::string opening(const ChatTemplate& t, const ChatOptions& o) {
    std::string out(t.bos);
    if (!t.system_in_first_user && (!o.system.empty() || t.always_system))
        out += expand(t.system, content_of(t, o.system.empty() ? t.default_system : o.system), o.date);
    return out;
}

// first: the conversation's first user turn, which may carry the system text.
std::string user_turn(const ChatTemplate& t, std::string_view content, bool first, const ChatOptions& o) {
    std::string system;
    if (first && t.system_in_first_user && !o.system.empty()) system = expand(t.system, o.system, o.date);
    return expand(t.user, content_of(t, content), o.date, system);
}

// What add_generation_prompt appends.
std::string generation_prompt(const ChatTemplate& t, const ChatOptions& o) {
    std::string out(t.generation_prompt);
    if (!o.thinking) out += t.no_thinking;
    return out;
}

// A reply after its reasoning block: from the end of think_close on, leading
// newlines dropped (Qwen3's template: content.split('</think>')[-1].lstrip('\n')).
std::string_view after_thinking(const ChatTemplate& t, std::string_view content) {
    if (t.think_close.empty()) return content;
    const size_t close = content.rfind(t.think_close);
    if (close == std::string_view::npos) return content;
    content.remove_prefix(close + t.think_close.size());
    while (!content.empty() && content.front() == '\n') content.remove_prefix(1);
    return content;
}

}  // namespace

std::string strip_thinking(ChatFormat format, std::string_view text) {
    const ChatTemplate& t = format.chat_template();
    if (t.think_open.empty() || t.think_close.empty()) return std::string(text);
    // Only a block the reply opens with: a close tag later in the answer is text.
    const size_t open = text.find_first_not_of(" \t\r\n");
    if (open == std::string_view::npos || text.compare(open, t.think_open.size(), t.think_open) != 0)
        return std::string(text);
    const size_t close = text.find(t.think_close, open + t.think_open.size());
    if (close == std::string_view::npos) return {};  // generation stopped inside it: all reasoning
    std::string_view rest = text.substr(close + t.think_close.size());
    while (!rest.empty() && rest.front() == '\n') rest.remove_prefix(1);
    return std::string(rest);
}

const char* chat_format_name(ChatFormat format) { return format.chat_template().name; }

ChatFormat chat_format_by_name(std::string_view name) {
    std::string known = kPlainChat.name;
    if (name == kPlainChat.name) return ChatFormat::plain;
    for (const FamilyDescriptor* f : families())
        if (f->chat) {
            if (name == f->chat->name) return ChatFormat(*f->chat);
            known += std::string(", ") + f->chat->name;
        }
    throw Error(ErrorKind::config, "unknown chat format '" + std::string(name) + "' (known: " + known + ")");
}

ChatFormat chat_format_from_template(std::string_view text) {
    for (const FamilyDescriptor* f : families())
        if (f->chat && !f->chat->marker.empty() && text.find(f->chat->marker) != std::string_view::npos)
            return ChatFormat(*f->chat);
    return ChatFormat::plain;
}

ChatFormat detect_chat_format(const std::filesystem::path& dir) {
    // Each model kind keeps its template in its own place: a GGUF file in its
    // metadata, a directory in its files; a llama2.c file has none (plain).
    // Files as every reader opens them: inside the directory, regular, limited.
    std::string text;
    std::error_code ec;
    const bool is_dir = std::filesystem::is_directory(dir, ec);
    if (!is_dir && dir.extension() != ".gguf") return ChatFormat::plain;
    if (!is_dir) {
        // tokenizer.chat_template (absent in base models: plain).
        const GgufFile f(dir);
        if (f.find("tokenizer.chat_template")) text = std::string(f.get_string("tokenizer.chat_template"));
    } else if (const auto jinja = model_file(dir, "chat_template.jinja")) {
        text = File(*jinja).read_all(kMaxConfigFileBytes, "a chat template");
    } else if (const auto cfg = model_file(dir, "tokenizer_config.json")) {
        const nlohmann::json j =
            parse_json(File(*cfg).read_all(kMaxConfigFileBytes, "a JSON config"), cfg->string());
        if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
            text = j["chat_template"].get<std::string>();
    }
    return chat_format_from_template(text);
}

std::string render_chat(ChatFormat format, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options, bool add_generation_prompt) {
    const ChatTemplate& t = format.chat_template();
    ChatOptions o = options;
    size_t first = 0;
    if (!messages.empty() && messages[0].role == "system") {
        o.system = messages[0].content;
        first = 1;
    }
    std::string out = opening(t, o);
    size_t last_user = first;
    bool any_user = false;
    for (size_t i = first; i < messages.size(); ++i)
        if (messages[i].role == "user") {
            last_user = i;
            any_user = true;
        }
    for (size_t i = first; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
            if (i > first) out += t.user_separator;
            out += user_turn(t, m.content, i == first, o);
        } else if (m.role == "assistant") {
            // Replies before the last user turn lose their reasoning (Qwen3).
            const std::string_view content = i < last_user ? after_thinking(t, m.content) : m.content;
            // Qwen3's template gives the conversation's last message, a reply after
            // the last user turn, a thought block: an empty one (no_thinking) when
            // the reply has none.
            const bool empty_thought = !t.think_close.empty() && any_user && i > last_user &&
                                       i + 1 == messages.size() && content.find(t.think_close) == std::string_view::npos;
            out += std::string(t.assistant) + std::string(empty_thought ? t.no_thinking : std::string_view{}) +
                   std::string(content_of(t, content)) + std::string(t.end_of_turn) + std::string(t.after_turn);
        } else {
            throw Error(ErrorKind::input, "unknown chat role '" + m.role + "' in message " +
                                              std::to_string(i));
        }
    }
    if (add_generation_prompt) out += generation_prompt(t, o);
    return out;
}

Chat::Chat(Session& session, const Tokenizer& tokenizer, ChatFormat format, ChatOptions options)
    : session_(session), tokenizer_(tokenizer), format_(format), options_(std::move(options)) {}

std::vector<int> Chat::turn_ids(std::string_view user) const {
    const ChatTemplate& t = format_.chat_template();
    std::vector<int> ids;
    std::string text;
    const bool first = cached_.empty() && pending_ < 0;
    if (first) {
        if (t.bos_from_tokenizer && session_.model().config().add_bos && tokenizer_.bos_id() >= 0)
            ids.push_back(tokenizer_.bos_id());
        text = opening(t, options_);
    } else {
        if (pending_ >= 0) ids.push_back(pending_);
        if (!pending_ends_turn_) text += t.end_of_turn;
        text += t.after_turn;
        text += t.user_separator;
    }
    text += user_turn(t, user, first, options_) + generation_prompt(t, options_);
    const std::vector<int> encoded = tokenizer_.encode(text, /*add_special=*/false);
    ids.insert(ids.end(), encoded.begin(), encoded.end());
    return ids;
}

GenerateResult Chat::reply(std::string_view user, const GenerateOptions& options, TextSink sink) {
    // The cache holds exactly cached_ unless a failed turn could not be undone.
    const int start = session_.pos();
    if (start != int(cached_.size()))
        throw Error(ErrorKind::input, "the chat's session holds " + std::to_string(start) +
                                          " tokens, the conversation " + std::to_string(cached_.size()) +
                                          " (a failed or aborted turn could not be rewound, or the session "
                                          "was used outside the chat): start a new chat");
    const std::vector<int> ids = turn_ids(user);
    if (session_.pos() + int(ids.size()) > session_.max_seq())
        throw Error(ErrorKind::capacity,
                    "this turn does not fit: " + std::to_string(session_.pos()) + " tokens in the cache + " +
                        std::to_string(ids.size()) + " new > max_seq " +
                        std::to_string(session_.max_seq()) + " (start a new chat or raise --max-seq)");
    GenerateOptions o = options;
    if (o.stop_ids.empty()) {
        // The model's EOS ids and the template's end-of-turn tokens.
        o.stop_ids = session_.model().config().eos_ids;
        for (std::string_view s : format_.chat_template().stop_tokens) {
            const int id = s.empty() ? -1 : tokenizer_.token_id(s);
            if (id >= 0 && std::find(o.stop_ids.begin(), o.stop_ids.end(), id) == o.stop_ids.end())
                o.stop_ids.push_back(id);
        }
    }
    GenerateResult r;
    try {
        r = generate(session_, &tokenizer_, ids, o, sink);
    } catch (const Error&) {
        // A turn that fails part-way (an abort keeps the blocks it completed)
        // leaves no trace: the cache goes back to where the turn began, so the
        // same or another reply can follow. A ring that no longer reaches that
        // far leaves the chat unusable (the check above says so).
        const int n = session_.pos() - start;
        if (n > 0 && n <= session_.max_rewind()) session_.rewind(n);
        throw;
    }
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
