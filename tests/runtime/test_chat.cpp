// Chat templates against transformers: render_chat must produce the text that
// apply_chat_template renders with the real Llama 3.1/3.2, Gemma 4, Qwen 2.5,
// Qwen 3, Mistral 7B Instruct, SmolLM3, Granite 3.3 and Phi-4-mini templates
// (tests/fixtures/chat/chat_cases.json, tools/fixtures/make_chat_fixtures.py),
// and the Llama 3 tokenizer.json must give the ids the Python tokenizer gave.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.hpp"
#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "tests/model/gguf_writer.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using nlohmann::json;

namespace {

std::filesystem::path chat_dir() { return test::fixtures_dir() / "chat"; }

json read_cases() {
    std::ifstream in(chat_dir() / "chat_cases.json");
    REQUIRE(in);
    json j = json::parse(in);
    REQUIRE(j["cases"].size() >= 12);
    return j;
}

std::vector<ChatMessage> messages_of(const json& c) {
    std::vector<ChatMessage> out;
    for (const json& m : c["messages"]) out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    return out;
}

// The templates the renderer implements. Left out:
// - llama3.0 (the template in ../shared/data/llama3-tokenizer): no system block.
// - mistral-v1 (mistralai's "v1" template, the hub's current one for
//   Mistral-7B-Instruct-v0.1/v0.2): it opens every user turn with " [INST] " and
//   every reply with a space ("<s> [INST] Hi [/INST] Hello!</s>"); the mistral
//   format writes the original template's "<s>[INST] Hi [/INST]Hello!</s>"
//   (mistral-pre-v1), whose cases are all checked. That template has no system
//   role (it raises), so the mistral format's system text (in front of the
//   first user message, as v1 puts it) has no case that checks it.
bool implemented(const std::string& t, ChatFormat* f) {
    if (t == "llama3.1" || t == "llama3.2") {
        *f = ChatFormat::llama3;
        return true;
    }
    if (t == "gemma4") {
        *f = ChatFormat::gemma4;
        return true;
    }
    if (t == "qwen2.5" || t == "qwen3") {
        *f = chat_format_by_name(t == "qwen3" ? "qwen3" : "qwen2");
        return true;
    }
    if (t == "mistral-pre-v1") {
        *f = chat_format_by_name("mistral");
        return true;
    }
    if (t == "smollm3") {
        *f = chat_format_by_name("smollm3");
        return true;
    }
    if (t == "granite3.3") {
        *f = chat_format_by_name("granite");
        return true;
    }
    if (t == "phi4-mini") {
        *f = chat_format_by_name("phi3");
        return true;
    }
    return false;
}

// Cases of an implemented template that the data model cannot express; empty:
// checked.
// - smollm3 (HuggingFaceTB/SmolLM3-3B's template): with enable_thinking=false
//   the template writes "Reasoning Mode: /no_think", the short default
//   instructions ("You are a helpful AI assistant named SmolLM, trained by
//   Hugging Face.") and "<think>\n\n</think>\n" in front of every earlier reply;
//   the smollm3 format only adds that empty thought block to the generation
//   prompt. A system text loses "/think" and "/no_think" (which set the mode)
//   and its trailing whitespace (rstrip); render_chat keeps it as it is.
// - granite3.3: without a system message the template writes a dated default
//   system turn ("Knowledge Cutoff Date: April 2024. Today's Date: " +
//   strftime_now('%B %d, %Y') + ". You are Granite, developed by IBM. You are a
//   helpful AI assistant."); the granite format writes no system turn then
//   (ChatTemplate expands {date} only in its own texts, not in default_system).
std::string left_out(const std::string& t, const json& c) {
    const std::string name = c["name"].get<std::string>();
    if (t == "smollm3") {
        if (!c.value("enable_thinking", true)) return "enable_thinking=false (/no_think mode)";
        if (name == "system_flag_no_think") return "a /no_think flag in the system text";
        if (name == "whitespace_and_unicode") return "the system text rstripped";
    }
    if (t == "granite3.3" && c["messages"][0]["role"] != "system") return "the dated default system turn";
    return {};
}

// Phi's templates end a text without generation prompt with eos_token; render_chat
// writes no EOS text (the conversation goes on with a user turn or the reply
// ended with <|end|>).
constexpr std::string_view kPhiEos = "<|endoftext|>";

}  // namespace

TEST_CASE("render_chat matches apply_chat_template (Llama 3.1/3.2, Gemma 4, Qwen 2.5/3, Mistral, SmolLM3, Granite, Phi)") {
    const json doc = read_cases();
    std::map<std::string, int> checked;
    for (const json& c : doc["cases"]) {
        ChatFormat f{};
        const std::string tmpl = c["template"].get<std::string>();
        if (!implemented(tmpl, &f) || !left_out(tmpl, c).empty()) continue;
        ChatOptions o;
        o.date = c["date"].get<std::string>();
        o.thinking = c.value("enable_thinking", true);
        const bool generation_prompt = c["add_generation_prompt"].get<bool>();
        const std::string got = render_chat(f, messages_of(c), o, generation_prompt);
        std::string want = c["text"].get<std::string>();
        if (tmpl == "phi4-mini" && !generation_prompt) {
            REQUIRE(want.ends_with(kPhiEos));
            want.resize(want.size() - kPhiEos.size());
        }
        CHECK_MESSAGE(got == want, tmpl, " ", c["name"].get<std::string>(), " add_generation_prompt=", generation_prompt,
                      " thinking=", o.thinking, "\n got: ", got, "\nwant: ", want);
        ++checked[tmpl];
    }
    CHECK(checked["llama3.1"] == 4);
    CHECK(checked["llama3.2"] == 4);
    CHECK(checked["gemma4"] == 4);
    CHECK(checked["qwen2.5"] == 18);       // 9 conversations x add_generation_prompt
    CHECK(checked["qwen3"] == 36);         // x enable_thinking
    CHECK(checked["mistral-pre-v1"] == 12);  // the 6 without a system message
    CHECK(checked["smollm3"] == 16);         // enable_thinking=true, 8 of the 10 conversations
    CHECK(checked["granite3.3"] == 6);       // the 3 conversations with a system message
    CHECK(checked["phi4-mini"] == 18);       // all (without the eos_token after add_generation_prompt=false)
}

TEST_CASE("chat cases render_chat does not check: how many, and why") {
    // smollm3-unsloth (llama.cpp's models/templates/HuggingFaceTB-SmolLM3-3B.jinja,
    // Unsloth's edit of the hub template): no "Today Date" line and the system turn
    // closed by <|im_end|>; the smollm3 format follows the hub template.
    // phi3.5 (Phi-3/3.5-mini): "<|system|>\n...<|end|>\n" - a newline after every
    // role tag and every <|end|> and "<|assistant|>\n" as the generation prompt;
    // the phi3 format writes Phi-4-mini's turns, without newlines.
    const json doc = read_cases();
    std::map<std::string, int> total, out;
    for (const json& c : doc["cases"]) {
        const std::string t = c["template"].get<std::string>();
        ++total[t];
        ChatFormat f{};
        if (!implemented(t, &f) || !left_out(t, c).empty()) ++out[t];
    }
    CHECK(total["smollm3"] == 40);
    CHECK(out["smollm3"] == 24);
    CHECK(total["smollm3-unsloth"] == 40);
    CHECK(out["smollm3-unsloth"] == 40);
    CHECK(total["granite3.3"] == 18);
    CHECK(out["granite3.3"] == 12);
    CHECK(total["phi3.5"] == 18);
    CHECK(out["phi3.5"] == 18);
    CHECK(total["phi4-mini"] == 18);
    CHECK(out["phi4-mini"] == 0);
}

TEST_CASE("render_chat: a system message and ChatOptions::system give the same text") {
    ChatOptions o;
    o.system = "Be brief.";
    const std::vector<ChatMessage> with_system = {{"system", "Be brief."}, {"user", "Hi"}};
    const std::vector<ChatMessage> without = {{"user", "Hi"}};
    for (ChatFormat f : {ChatFormat::llama3, ChatFormat::gemma4})
        CHECK(render_chat(f, with_system, ChatOptions{}, true) == render_chat(f, without, o, true));
    CHECK_THROWS_AS(render_chat(ChatFormat::gemma4, {{"tool", "x"}}, ChatOptions{}, true), Error);
}

TEST_CASE("detect_chat_format reads the template files") {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "staticlm_test_chat_detect";
    std::filesystem::create_directories(dir);
    auto detect_jinja = [&](const char* file) {
        std::filesystem::copy_file(chat_dir() / file, dir / "chat_template.jinja",
                                   std::filesystem::copy_options::overwrite_existing);
        return detect_chat_format(dir);
    };
    CHECK(detect_jinja("google-gemma-4-31B-it.jinja") == ChatFormat::gemma4);
    CHECK(detect_jinja("meta-llama-Llama-3.1-8B-Instruct.jinja") == ChatFormat::llama3);
    CHECK(detect_jinja("meta-llama-Llama-3.2-3B-Instruct.jinja") == ChatFormat::llama3);
    CHECK(detect_jinja("Qwen-Qwen2.5-7B-Instruct.jinja") == chat_format_by_name("qwen2"));
    CHECK(detect_jinja("Qwen-Qwen3-0.6B.jinja") == chat_format_by_name("qwen3"));
    CHECK(detect_jinja("mistralai-Mistral-7B-Instruct-v0.2.jinja") == chat_format_by_name("mistral"));
    CHECK(detect_jinja("mistralai-Mistral-7B-Instruct-v0.2-pre-v1.jinja") == chat_format_by_name("mistral"));
    CHECK(detect_jinja("HuggingFaceTB-SmolLM3-3B.jinja") == chat_format_by_name("smollm3"));
    CHECK(detect_jinja("ibm-granite-granite-3.3-2B-Instruct.jinja") == chat_format_by_name("granite"));
    CHECK(detect_jinja("microsoft-Phi-4-mini-instruct.jinja") == chat_format_by_name("phi3"));
    std::filesystem::remove(dir / "chat_template.jinja");
    CHECK(detect_chat_format(dir) == ChatFormat::plain);
    std::filesystem::remove_all(dir);
    if (test::have_shared_data("chat format of llama3-tokenizer"))
        CHECK(detect_chat_format(test::shared_data() / "llama3-tokenizer") == ChatFormat::llama3);
}

namespace {

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE(in);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("chat template markers: the Qwen and Mistral templates find their own families, and no other's") {
    const ChatFormat qwen2 = chat_format_by_name("qwen2"), qwen3 = chat_format_by_name("qwen3"),
                     mistral = chat_format_by_name("mistral");
    CHECK(chat_format_from_template(read_text(chat_dir() / "Qwen-Qwen2.5-7B-Instruct.jinja")) == qwen2);
    CHECK(chat_format_from_template(read_text(chat_dir() / "Qwen-Qwen3-0.6B.jinja")) == qwen3);
    CHECK(chat_format_from_template(read_text(chat_dir() / "mistralai-Mistral-7B-Instruct-v0.2.jinja")) == mistral);
    CHECK(chat_format_from_template(read_text(chat_dir() / "mistralai-Mistral-7B-Instruct-v0.2-pre-v1.jinja")) ==
          mistral);
    // The Llama 3 and Gemma templates hold none of the new markers (and still find their own families).
    for (const char* file : {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
                             "google-gemma-4-31B-it.jinja"}) {
        const std::string text = read_text(chat_dir() / file);
        for (ChatFormat f : {qwen2, qwen3, mistral}) {
            INFO(file, " ", chat_format_name(f));
            CHECK(text.find(f.chat_template().marker) == std::string::npos);
        }
        CHECK(chat_format_from_template(text) == (std::string(file).starts_with("google") ? ChatFormat::gemma4
                                                                                            : ChatFormat::llama3));
    }
    CHECK(chat_format_from_template("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n") ==
          chat_format_by_name("gemma3"));
    // tokenizer_config.json "chat_template" (no chat_template.jinja) is read the same way.
    test::TempDir tmp;
    test::write_file(tmp.path / "tokenizer_config.json",
                     json{{"chat_template", read_text(chat_dir() / "Qwen-Qwen3-0.6B.jinja")}}.dump());
    CHECK(detect_chat_format(tmp.path) == qwen3);
}

TEST_CASE("chat template markers: the SmolLM3, Granite and Phi templates find their own families, and no other's") {
    const ChatFormat smollm3 = chat_format_by_name("smollm3"), granite = chat_format_by_name("granite"),
                     phi3 = chat_format_by_name("phi3");
    const std::pair<const char*, ChatFormat> own[] = {
        {"HuggingFaceTB-SmolLM3-3B.jinja", smollm3},
        {"unsloth-SmolLM3-3B.jinja", smollm3},
        {"ibm-granite-granite-3.3-2B-Instruct.jinja", granite},
        {"microsoft-Phi-3.5-mini-instruct.jinja", phi3},
        {"microsoft-Phi-4-mini-instruct.jinja", phi3},
    };
    for (const auto& [file_, format] : own) {
        const auto& file = file_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        INFO(file);
        CHECK(chat_format_from_template(read_text(chat_dir() / file)) == format);
    }
    // The older templates hold none of the three markers and still find their own families.
    const std::pair<const char*, ChatFormat> older[] = {
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", ChatFormat::llama3},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", ChatFormat::llama3},
        {"google-gemma-4-31B-it.jinja", ChatFormat::gemma4},
        {"Qwen-Qwen2.5-7B-Instruct.jinja", chat_format_by_name("qwen2")},
        {"Qwen-Qwen3-0.6B.jinja", chat_format_by_name("qwen3")},
        {"mistralai-Mistral-7B-Instruct-v0.2.jinja", chat_format_by_name("mistral")},
        {"mistralai-Mistral-7B-Instruct-v0.2-pre-v1.jinja", chat_format_by_name("mistral")},
    };
    for (const auto& [file_, format] : older) {
        const auto& file = file_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        const std::string text = read_text(chat_dir() / file);
        for (ChatFormat f : {smollm3, granite, phi3}) {
            INFO(file, " ", chat_format_name(f));
            CHECK(text.find(f.chat_template().marker) == std::string::npos);
        }
        INFO(file);
        CHECK(chat_format_from_template(text) == format);
    }
    // The Gemma 3 template (as the Gemma 3 test writes it) neither.
    CHECK(chat_format_from_template("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n") ==
          chat_format_by_name("gemma3"));
    // tokenizer_config.json "chat_template" (a GGUF's tokenizer.chat_template is the same text).
    test::TempDir tmp;
    test::write_file(tmp.path / "tokenizer_config.json",
                     json{{"chat_template", read_text(chat_dir() / "ibm-granite-granite-3.3-2B-Instruct.jinja")}}.dump());
    CHECK(detect_chat_format(tmp.path) == granite);
}

TEST_CASE("chat: strip_thinking gives the reply after its reasoning block") {
    const ChatFormat qwen3 = chat_format_by_name("qwen3");
    // A closed block: the text after it, without the blank lines that follow it.
    CHECK(strip_thinking(qwen3, "<think>\nreasoning\n</think>\n\nanswer") == "answer");
    CHECK(strip_thinking(qwen3, "<think>\n\n</think>\n\nanswer\n\nmore") == "answer\n\nmore");
    // Only the block the reply opens with: a close tag in the answer is text
    // (a reply with thinking off, or one whose answer mentions the tag).
    CHECK(strip_thinking(qwen3, "<think>\nr\n</think>\n\nUse the </think> tag") == "Use the </think> tag");
    CHECK(strip_thinking(qwen3, "Use the </think> tag") == "Use the </think> tag");
    // An unclosed block (generation stopped inside it) is all reasoning.
    CHECK(strip_thinking(qwen3, "<think>\nstill thinking").empty());
    CHECK(strip_thinking(qwen3, "\n<think>\nstill thinking").empty());
    CHECK(strip_thinking(qwen3, "<think>").empty());
    // No block: unchanged.
    CHECK(strip_thinking(qwen3, "just an answer") == "just an answer");
    CHECK(strip_thinking(qwen3, "a <think> in the middle") == "a <think> in the middle");
    CHECK(strip_thinking(qwen3, "").empty());
    // Templates without thinking tags leave the text alone.
    for (ChatFormat f : {chat_format_by_name("qwen2"), chat_format_by_name("mistral"), ChatFormat::llama3,
                         ChatFormat::gemma4, ChatFormat::plain}) {
        INFO(chat_format_name(f));
        CHECK(strip_thinking(f, "<think>\nreasoning\n</think>\n\nanswer") == "<think>\nreasoning\n</think>\n\nanswer");
        CHECK(strip_thinking(f, "<think>\nstill thinking") == "<think>\nstill thinking");
    }
}

TEST_CASE("Llama 3 chat texts tokenize to the ids of the Python tokenizer") {
    if (!test::have_shared_data("Llama 3 chat ids")) return;
    const std::filesystem::path dir = test::shared_data() / "llama3-tokenizer";
    const auto tok = load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
    const json doc = read_cases();
    int checked = 0;
    for (const json& c : doc["cases"]) {
        if (!c.contains("ids")) continue;
        const std::vector<int> want = c["ids"].get<std::vector<int>>();
        const std::vector<int> got = tok->encode(c["text"].get<std::string>(), /*add_special=*/false);
        CHECK_MESSAGE(got == want, c["template"].get<std::string>(), " ", c["name"].get<std::string>());
        ++checked;
    }
    CHECK(checked == 12);
}

TEST_CASE("a chat template is data: a Gemma 3 template renders as apply_chat_template does") {
    // The Gemma 3 template (../shared/data/gemma3-tokenizer), written as data: the
    // system text opens the first user turn. Expected texts from transformers 5.24
    // apply_chat_template with that tokenizer_config.json.
    static const ChatTemplate g3{
        .name = "gemma3-test",
        .marker = "<start_of_turn>",
        .bos = "<bos>",
        .system = "{content}\n\n",
        .system_in_first_user = true,
        .user = "<start_of_turn>user\n{system}{content}<end_of_turn>\n",
        .assistant = "<start_of_turn>model\n",
        .end_of_turn = "<end_of_turn>",
        .after_turn = "\n",
        .generation_prompt = "<start_of_turn>model\n",
        .trim = true,
        .stop_tokens = {"<end_of_turn>", "<eos>"},
    };
    const ChatFormat f(g3);
    CHECK(std::string(chat_format_name(f)) == "gemma3-test");
    const std::vector<ChatMessage> m = {{"system", " Be brief. "}, {"user", " Hi "}, {"assistant", "Hello!"}, {"user", "Bye"}};
    CHECK(render_chat(f, m, ChatOptions{}, true) ==
          "<bos><start_of_turn>user\n Be brief. \n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
          "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    CHECK(render_chat(f, {m[1]}, ChatOptions{}, true) == "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
    // The Gemma 3 family's own template renders the same.
    const ChatFormat family = chat_format_by_name("gemma3");
    CHECK(render_chat(family, m, ChatOptions{}, true) == render_chat(f, m, ChatOptions{}, true));
    CHECK(render_chat(family, {m[1]}, ChatOptions{}, true) == render_chat(f, {m[1]}, ChatOptions{}, true));
    CHECK(chat_format_from_template("{{ '<start_of_turn>user\\n' }}") == family);
    CHECK(chat_format_by_name("gemma4") == ChatFormat::gemma4);
    CHECK(chat_format_by_name("plain") == ChatFormat::plain);
    CHECK(ChatFormat{} == ChatFormat::plain);
    test::expect_error([] { chat_format_by_name("chatml"); }, ErrorKind::config, {"chatml", "plain, llama3, gemma3, gemma4"});
}

TEST_CASE("the chat format of a GGUF file: tokenizer.chat_template, else plain") {
    test::TempDir tmp;
    const auto path = tmp.path / "chat.gguf";
    test::write_file(path, test::tiny_gguf_model()
                               .kv_string("tokenizer.chat_template",
                                          "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n...")
                               .bytes());
    CHECK(detect_chat_format(path) == chat_format_by_name("gemma3"));
    const auto base = tmp.path / "base.gguf";
    test::write_file(base, test::tiny_gguf_model().bytes());
    CHECK(detect_chat_format(base) == ChatFormat::plain);
}
