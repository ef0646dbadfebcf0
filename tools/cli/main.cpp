// The staticlm command line: generate, chat, info, tokenize (bench, verify and
// perplexity live in bench_cmd.cpp / measure_cmd.cpp). Uses only the public
// headers. Exit codes: 0 ok, 1 runtime error (one line on stderr), 2 usage
// error, 130 generation stopped by Ctrl-C.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "staticlm/chat.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/staticlm.h"
#include "cli_args.hpp"
#include "commands.hpp"
#include "interrupt.hpp"

namespace staticlm::cli {

namespace {

std::string usage_text() {
    return "usage: staticlm <command> [flags]   (staticlm <command> --help for its flags and defaults)\n"
           "commands:\n"
           "  generate    continue a prompt:   staticlm generate -m DIR -p \"Once upon a time\" -n 64\n"
           "  chat        multi-turn chat:     staticlm chat -m DIR\n"
           "  info        model summary:       staticlm info -m DIR\n"
           "  tokenize    token ids of a text: staticlm tokenize -m DIR \"Hello world\"\n"
           "  bench       prefill/decode speed against this machine's ceilings\n"
           "  verify      compare logits with a reference file\n"
           "  perplexity  perplexity of a text file\n"
           "  batch       JSONL prompts to JSONL results, resumable and sharded (docs/BATCH.md)\n"
           "  --version   print the version\n";
}

// Streams text to stdout and remembers whether the last byte was a newline.
struct Output {
    bool at_line_start = true;
    void write(std::string_view text) {
        if (text.empty()) return;
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        at_line_start = text.back() == '\n';
    }
    static void sink(void* ctx, std::string_view text) { static_cast<Output*>(ctx)->write(text); }
    // On a terminal, end the output with a newline (a pipe gets the text exactly).
    void finish() {
        if (!at_line_start && isatty(1)) write("\n");
    }
};

// --hide-thinking: a reply that opens with the template's reasoning block
// (think_open after white space) is held back until think_close, and the block
// and the newlines after it are dropped; any other reply passes as it comes.
struct ThinkingFilter {
    Output* out = nullptr;
    std::string_view open, close;
    enum class State { deciding, hiding, trimming, passing } state = State::passing;
    std::string held;

    void start() {
        held.clear();
        state = open.empty() || close.empty() ? State::passing : State::deciding;
    }
    void write(std::string_view text) {
        if (state == State::passing) return out->write(text);
        held += text;
        if (state == State::deciding) {
            const size_t b = held.find_first_not_of(" \t\r\n");
            if (b == std::string::npos) return;
            const std::string_view rest = std::string_view(held).substr(b);
            if (rest.size() < open.size() && open.starts_with(rest)) return;  // not decided yet
            if (!rest.starts_with(open)) return pass_held();
            state = State::hiding;
        }
        if (state == State::hiding) {
            const size_t c = held.find(close);
            if (c == std::string::npos) return;
            held.erase(0, c + close.size());
            state = State::trimming;
        }
        const size_t b = held.find_first_not_of('\n');
        if (b == std::string::npos) return held.clear();
        held.erase(0, b);
        pass_held();
    }
    void pass_held() {
        state = State::passing;
        out->write(held);
        held.clear();
    }
    // The reply ended: text held while it might still have opened a block
    // ("<th", white space) is the reply; an unclosed block stays hidden.
    void finish() {
        if (state == State::deciding) pass_held();
        held.clear();
    }
    static void sink(void* ctx, std::string_view text) { static_cast<ThinkingFilter*>(ctx)->write(text); }
};

bool keep_going(void*, int, std::string_view) { return !interrupted(); }

// --logprobs: the text each token completed (what the plain output streams),
// kept for the JSON lines written after generation.
struct TokenTexts {
    std::vector<std::string> texts;  // [generated tokens]
    static bool fn(void* ctx, int token, std::string_view text) {
        auto& t = static_cast<TokenTexts*>(ctx)->texts;
        if (token >= 0)
            t.emplace_back(text);
        else if (!t.empty())
            t.back() += text;  // held back until the end
        return !interrupted();
    }
};

void append_logprob(std::string& s, int token, float logprob, const Tokenizer& tok) {
    s += "{\"token\":" + std::to_string(token) + ",\"piece\":";
    append_json_string(s, tok.piece(token));
    s += ",\"logprob\":";
    char buf[32];
    s.append(buf, std::to_chars(buf, buf + sizeof(buf), logprob).ptr);  // shortest round-trip
}

// One JSON object per generated token: id, vocabulary piece, the text it
// completed, log-probability, and the top alternatives when asked for.
void print_logprobs(const GenerateResult& r, const TokenTexts& texts, const Tokenizer& tok) {
    std::string s;
    for (size_t i = 0; i < r.tokens.size() && i < r.logprobs.size(); ++i) {
        s.clear();
        append_logprob(s, r.tokens[i], r.logprobs[i], tok);
        s += ",\"text\":";
        append_json_string(s, i < texts.texts.size() ? texts.texts[i] : std::string());
        if (r.top_n > 0) {
            s += ",\"top\":[";
            for (int k = 0; k < r.top_n; ++k) {
                const TokenLogprob& t = r.top_logprobs[i * size_t(r.top_n) + size_t(k)];
                if (k) s += ',';
                append_logprob(s, t.token, t.logprob, tok);
                s += '}';
            }
            s += ']';
        }
        s += "}\n";
        std::fwrite(s.data(), 1, s.size(), stdout);
    }
    std::fflush(stdout);
}

std::string stop_text(const GenerateResult& r, const GenerateOptions& g, const Session& s) {
    switch (r.reason) {
        case StopReason::eos: return "end of text (EOS token)";
        case StopReason::stop_string: return "stop string";
        case StopReason::max_tokens: return "-n " + std::to_string(g.max_tokens) + " tokens generated";
        case StopReason::capacity:
            return "context full: " + std::to_string(s.max_seq()) + " tokens (raise -c/--max-seq)";
        case StopReason::aborted: return "interrupted (Ctrl-C)";
    }
    return "?";
}

void print_stats(const GenerateResult& r, const GenerateOptions& g, const Session& s) {
    const GenerateStats& st = r.stats;
    std::fprintf(stderr,
                 "\n[staticlm] prompt %d tokens, %.1f tok/s | first token %.1f ms | generated %d tokens, %.1f "
                 "tok/s | stopped: %s\n",
                 st.prompt_tokens, st.prefill_tok_per_s(), st.first_token_seconds * 1e3, st.generated_tokens,
                 st.decode_tok_per_s(), stop_text(r, g, s).c_str());
    if (g.speculation.max_draft > 0) {
        // Forward passes after the first token: one per decode or verify step;
        // each accepted draft token saved one.
        const int after_first = std::max(st.generated_tokens - 1, 0);
        const int passes = after_first - st.accepted_tokens;
        std::fprintf(stderr,
                     "[staticlm] speculation ngram:%d: %d verify steps, %d of %d drafted tokens accepted (%.1f%%), "
                     "%.2f tokens per forward pass\n",
                     g.speculation.max_draft, st.draft_steps, st.accepted_tokens, st.drafted_tokens,
                     100.0 * st.acceptance_rate(), passes > 0 ? double(after_first) / passes : 0.0);
    }
}

const Tokenizer& require_tokenizer(const Model& model, const char* cmd) {
    const Tokenizer* tok = model_tokenizer(model);
    if (!tok) throw Error(ErrorKind::config, std::string(cmd) + " needs a model with a tokenizer");
    return *tok;
}

// Refuses text that cannot fit in `tokens_left` before tokenizing it (a huge
// prompt would otherwise cost its whole tokenization in time and memory).
void check_text_fits(const std::string& text, const Tokenizer& tok, int tokens_left, int max_seq,
                     const char* what) {
    const size_t limit = max_text_bytes(tok, tokens_left);
    if (text.size() > limit)
        throw Error(ErrorKind::capacity,
                    std::string(what) + " is " + std::to_string(text.size()) + " bytes: it cannot fit in the " +
                        std::to_string(tokens_left) + " free tokens of the context (at most " +
                        std::to_string(limit) + " bytes can; raise -c/--max-seq, now " + std::to_string(max_seq) +
                        ", or shorten it)");
}

int cmd_generate(const Args& a) {
    if (a.has("prompt") && a.has("prompt-file")) throw UsageError("give -p/--prompt or -f/--prompt-file, not both");
    const std::string prompt = a.has("prompt-file")
                                   ? read_text_input(a.str("prompt-file"), a.spelled("prompt-file"), kMaxTextFileBytes)
                                   : a.str("prompt");
    auto model = load_model_from_args(a);
    const Tokenizer& tok = require_tokenizer(*model, "generate");
    const ModelConfig& config = model_config(*model);
    const SessionOptions so = session_options_from_args(a, config);
    GenerateOptions g = generate_options_from_args(a, config, 256);
    if (a.has("logprobs")) {
        g.logprobs = a.integer("logprobs", 0);
        if (g.logprobs < 0 || g.logprobs > kMaxLogprobs)
            throw UsageError(a.spelled("logprobs") + " must be in 0.." + std::to_string(kMaxLogprobs) + ", got " +
                             a.str("logprobs"));
        if (a.has("echo")) throw UsageError("--echo and --logprobs do not go together (stdout is JSON lines)");
    }
    if (a.has("json-schema") && a.has("grammar")) throw UsageError("give --json-schema or --grammar, not both");
    if (a.has("json-schema") || a.has("grammar")) {
        const bool schema = a.has("json-schema");
        const char* flag = schema ? "json-schema" : "grammar";
        const std::string text = read_text_input(a.str(flag), a.spelled(flag), size_t{1} << 20);
        const auto t0 = std::chrono::steady_clock::now();
        const auto vocab = std::make_shared<const TokenVocabulary>(tok);
        std::fprintf(stderr, "[staticlm] vocabulary: %d tokens, %zu trie nodes, %.2f s\n", vocab->size(),
                     vocab->node_byte.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        g.constraint = schema ? Constraint::json_schema(text, vocab) : Constraint::grammar(text, vocab);
        std::fprintf(stderr, "[staticlm] %s: %d automaton states, %d token states, %d distinct masks (%.1f MiB), "
                     "compiled in %.2f s\n", flag, g.constraint->dfa_states(), g.constraint->token_states(),
                     g.constraint->distinct_masks(), double(g.constraint->bytes()) / 1048576.0,
                     g.constraint->compile_seconds());
    }
    check_text_fits(prompt, tok, so.max_seq, so.max_seq, "the prompt");
    std::vector<int> ids = tok.encode(prompt, /*add_special=*/true);
    if (ids.empty()) {
        if (tok.bos_id() < 0) throw Error(ErrorKind::input, "empty prompt and no BOS token");
        ids.push_back(tok.bos_id());
    }
    if (int(ids.size()) > so.max_seq)
        throw Error(ErrorKind::capacity, "the prompt is " + std::to_string(ids.size()) +
                                             " tokens, more than the context of " + std::to_string(so.max_seq) +
                                             " (raise -c/--max-seq or shorten the prompt)");
    Session session(model, so);
    Output out;
    if (a.has("echo")) out.write(prompt);
    GenerateOptions go = g;
    go.on_token = {keep_going, nullptr};
    TokenTexts texts;
    if (g.logprobs >= 0) go.on_token = {TokenTexts::fn, &texts};
    GenerateResult r;
    {
        ReplyScope scope;
        r = generate(session, &tok, ids, go, g.logprobs >= 0 ? TextSink{} : TextSink{Output::sink, &out});
    }
    if (g.logprobs >= 0)
        print_logprobs(r, texts, tok);
    else
        out.finish();
    print_stats(r, g, session);  // stdout holds exactly the generated text
    if (g.constraint && !r.complete)
        std::fprintf(stderr, "[staticlm] the output is not a complete value of the %s\n",
                     a.has("json-schema") ? "schema (incomplete JSON)" : "grammar");
    return r.reason == StopReason::aborted ? kExitInterrupted : kExitOk;
}

int cmd_chat(const Args& a) {
    auto model = load_model_from_args(a);
    const Tokenizer& tok = require_tokenizer(*model, "chat");
    const ModelConfig& config = model_config(*model);
    Session session(model, session_options_from_args(a, config));
    const ChatFormat format = detect_chat_format(a.str("model"));
    ChatOptions co;
    co.system = a.str("system");
    if (a.has("date")) co.date = a.str("date");
    co.thinking = thinking_from_args(a);
    Chat chat(session, tok, format, co);
    GenerateOptions g = generate_options_from_args(a, config, 512);
    g.on_token = {keep_going, nullptr};
    const bool interactive = isatty(0);
    std::ios::sync_with_stdio(false);  // stdin is read only through std::cin here (fast long lines)
    std::string line;
    Output out;
    ThinkingFilter filter;
    filter.out = &out;
    if (a.has("hide-thinking")) {
        filter.open = format.chat_template().think_open;
        filter.close = format.chat_template().think_close;
    }
    while (true) {
        if (interactive) std::fputs("> ", stderr);
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        check_text_fits(line, tok, session.max_seq() - session.pos(), session.max_seq(), "this turn");
        GenerateResult r;
        {
            ReplyScope scope;
            filter.start();
            r = chat.reply(line, g, {ThinkingFilter::sink, &filter});
            filter.finish();
        }
        out.write("\n");
        if (interactive)
            print_stats(r, g, session);
        else if (r.reason == StopReason::capacity || r.reason == StopReason::aborted)
            std::fprintf(stderr, "[staticlm] reply stopped: %s\n", stop_text(r, g, session).c_str());
    }
    return kExitOk;
}

std::string read_stdin_text() { return read_text_input("-", "stdin", kMaxTextFileBytes); }

int cmd_tokenize(const Args& a) {
    // Only the tokenizer files are read: a directory with just tokenizer.json works.
    if (!a.has("model")) throw UsageError("-m/--model DIR is required");
    const std::unique_ptr<Tokenizer> tok = load_model_tokenizer(a.str("model"), a.has("prefer-json"));
    std::string text;
    if (a.positional().empty() || (a.positional().size() == 1 && a.positional()[0] == "-")) {
        text = read_stdin_text();
    } else {
        for (size_t i = 0; i < a.positional().size(); ++i) text += (i ? " " : "") + a.positional()[i];
    }
    const std::vector<int> ids = tok->encode(text, a.has("add-special"));
    if (a.has("pieces")) {
        for (int id : ids) std::printf("%d -> '%s'\n", id, tok->piece(id).c_str());
        return kExitOk;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
    return kExitOk;
}

int cmd_info(const Args& a) {
    if (a.has("model") && a.str("model").ends_with(".gguf") && std::filesystem::is_regular_file(a.str("model")))
        std::printf("%s\n", gguf_file_summary(a.str("model")).c_str());
    auto model = load_model_from_args(a);
    const ModelConfig& c = model_config(*model);
    const SessionOptions so = session_options_from_args(a, c);
    Session session(model, so);
    std::printf("model        %s (%s)\n", c.architecture.c_str(), c.family.c_str());
    std::printf("hidden       %d\nlayers       %d\nvocab        %d\n", c.hidden, c.n_layers, c.vocab);
    if (!c.layers.empty()) {
        const LayerConfig& l = c.layers[0];
        std::printf("heads        %d (kv %d, head_dim %d)\nffn          %d\n", l.n_heads, l.n_kv_heads, l.head_dim,
                    l.ffn_dim);
    }
    int sliding = 0, shared = 0;
    for (size_t i = 0; i < c.layers.size(); ++i) {
        sliding += c.layers[i].attention == AttentionType::sliding;
        shared += c.layers[i].kv_source != int(i);
    }
    if (sliding) std::printf("sliding      %d layers\n", sliding);
    if (shared) std::printf("kv-shared    %d layers\n", shared);
    if (c.per_layer_dim) std::printf("per-layer    %d\n", c.per_layer_dim);
    std::printf("context      %d (max_position_embeddings)\n", c.max_position);
    bool int_formats = false;  // activations are quantized for these only
    for (const WeightTypeUsage& u : model_weight_usage(*model))
        int_formats = int_formats || weight_type_info(u.type).math == WeightMath::int8;
    std::printf("weights      %s, %.1f MiB%s\n",
                model_weights_label(*model).c_str(),
                model_weight_bytes(*model) / 1048576.0,
                !int_formats ? "" : model_act_bits(*model) == 16 ? ", 16-bit activations" : ", 8-bit activations");
    for (const WeightTypeUsage& u : model_weight_usage(*model))
        std::printf("  %-10s %d matrices, %.1fM weights, %.1f MiB, %.4f bytes/weight\n",
                    weight_type_name(u.type), u.matrices, u.weights / 1e6, u.bytes / 1048576.0,
                    u.bytes / u.weights);
    std::printf("load         %.3f s\n", model_load_seconds(*model));
    std::printf("kv cache     %s, max_seq %d, %.1f MiB (%.1f KiB per token)\n", kv_type_name(so.kv), so.max_seq,
                session.cache_bytes() / 1048576.0, session.cache_bytes_per_token() / 1024.0);
    auto list = [](const std::vector<int>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) {
            if (i) s += ',';
            s += std::to_string(v[i]);
        }
        return s;
    };
    std::printf("buckets      prefill %s, append %s\n", list(so.prefill_buckets).c_str(),
                list(so.append_buckets).c_str());
    std::printf("workspace    %.1f MiB\n", session.workspace_bytes() / 1048576.0);
    std::printf("target       %s\nthreads      %d\n", kernel_target_name().c_str(), session.threads());
    const SamplingOptions s = suggested_sampling(c);
    std::printf("sampling     temp %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g (flags override)\n",
                double(s.temperature), s.top_k, double(s.top_p), double(s.min_p), double(s.repetition_penalty));
    std::printf("eos          %s\n", list(c.eos_ids).c_str());
    if (const Tokenizer* tok = model_tokenizer(*model)) {
        std::printf("tokenizer    vocab %d, bos %d, eos %d\n", tok->vocab_size(), tok->bos_id(), tok->eos_id());
        if (a.has("model") && !a.has("synthetic"))
            std::printf("chat format  %s\n", chat_format_name(detect_chat_format(a.str("model"))));
    }
    return kExitOk;
}

}  // namespace

int run(int argc, char** argv) {
    if (argc < 2) {
        std::fputs(usage_text().c_str(), stderr);
        return kExitUsage;
    }
    const std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        std::fputs(usage_text().c_str(), stdout);
        return kExitOk;
    }
    if (cmd == "--version" || cmd == "version") {
        std::printf("staticlm %s (C API %d, kernels %s)\n", slm_version(), slm_api_version(),
                    kernel_target_name().c_str());
        return kExitOk;
    }
    const CommandSpec& spec = command_spec(cmd);
    const Args a(spec, argc, argv, 2);
    if (a.help()) {
        std::fputs(command_help(spec).c_str(), stdout);
        return kExitOk;
    }
    // batch keeps the default SIGINT: a killed job resumes from its output file.
    if (cmd == "batch") return cmd_batch(a);
    install_interrupt_handler();
    if (cmd == "generate") return cmd_generate(a);
    if (cmd == "chat") return cmd_chat(a);
    if (cmd == "info") return cmd_info(a);
    if (cmd == "tokenize") return cmd_tokenize(a);
    if (cmd == "bench") return cmd_bench(a);
    if (cmd == "verify") return cmd_verify(a);
    if (cmd == "perplexity") return cmd_perplexity(a);
    throw UsageError("unknown command '" + cmd + "'");
}

}  // namespace staticlm::cli

int main(int argc, char** argv) {
    try {
        return staticlm::cli::run(argc, argv);
    } catch (const staticlm::cli::UsageError& e) {
        std::fprintf(stderr, "staticlm: %s\n", e.what());
        return staticlm::cli::kExitUsage;
    } catch (const staticlm::Error& e) {
        std::string msg = e.what();
        // Name the flag to change when the library speaks of its own settings.
        if (e.kind() == staticlm::ErrorKind::capacity && msg.find("capacity exceeded") != std::string::npos)
            msg += " (raise -c/--max-seq)";
        std::fprintf(stderr, "staticlm: error: %s\n", msg.c_str());
        return staticlm::cli::kExitError;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "staticlm: error: %s\n", e.what());
        return staticlm::cli::kExitError;
    }
}
