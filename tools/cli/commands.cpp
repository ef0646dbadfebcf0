// The flags of every staticlm subcommand, with their short forms (llama.cpp's
// where it has one) and the defaults --help shows.
#include <map>

#include "commands.hpp"
#include "staticlm/types.hpp"

namespace staticlm::cli {

namespace {

std::vector<FlagSpec> operator+(std::vector<FlagSpec> a, const std::vector<FlagSpec>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

const char* const kWeightsDefault = "native for a .gguf file, else q8";
// --weights: every format of staticlm/weight_formats.h, then native.
std::string weights_choices() {
    std::string s;
    for (WeightType t : weight_types()) s += std::string(weight_type_name(t)) + ", ";
    return s + "or native (a file's own formats)";
}
const FlagSpec kActBits = {"act-bits", "", "8|16",
                           "activations of the integer formats: int8, or two int8 planes (2^8 finer, slower prefill)",
                           "8"};

const FlagSpec kThreadsList = {"threads", "t", "N[,N...]",
                               "thread counts to measure, each in this one process (0: all CPUs)", "0"};

std::map<std::string, CommandSpec> make_specs() {
    std::map<std::string, CommandSpec> m;
    m["generate"] = {
        "generate", "generate -m DIR [-p TEXT | -f FILE] [flags]",
        "Continues a prompt and streams the generated text to stdout (a timing summary and the stop\n"
        "reason go to stderr). An empty prompt starts from BOS. Ctrl-C stops the generation.",
        model_flags() +
            std::vector<FlagSpec>{
                {"prompt", "p", "TEXT", "the prompt", "\"\""},
                {"prompt-file", "f", "FILE", "read the prompt from FILE ('-': stdin; at most 64 MiB)", ""},
                {"echo", "", "", "print the prompt before the generated text", ""},
                {"logprobs", "", "N",
                 "stdout is JSON lines, one per generated token: its log-probability and the N (0..20) most likely "
                 "alternatives (docs/CLI.md)",
                 ""},
                {"json-schema", "", "FILE",
                 "constrain the output to this JSON Schema (compact JSON; the subset is in docs/BATCH.md)", ""},
                {"grammar", "", "FILE", "constrain the output to this GBNF grammar (docs/BATCH.md)", ""},
            } +
            load_flags() + session_flags() + sampling_flags() + generation_flags(256),
        ""};
    m["chat"] = {
        "chat", "chat -m DIR [--system TEXT] [flags]",
        "Interactive multi-turn chat with the model's chat template; the KV cache is reused across turns.\n"
        "Reads one user turn per line (stdin may be a pipe). Ctrl-C stops the current reply, a second\n"
        "Ctrl-C (or one at the prompt) exits.",
        model_flags() +
            std::vector<FlagSpec>{
                {"system", "", "TEXT", "system prompt", ""},
                {"date", "", "TEXT", "the date Llama 3 templates print", "26 Jul 2024"},
                {"thinking", "", "on|off", "reasoning models (Qwen3): off opens every reply with an empty thought block", "on"},
                {"hide-thinking", "", "", "leave a reply's <think>...</think> block out of the printed text", ""},
            } +
            load_flags() + session_flags() + sampling_flags() + generation_flags(512),
        ""};
    m["info"] = {"info", "info (-m DIR | --synthetic NAME) [flags]",
                 "Prints the model's shape, memory, chat format, suggested sampling and the kernel target.",
                 model_flags() +
                     std::vector<FlagSpec>{{"synthetic", "", "NAME", "a built-in random-weight shape instead of -m", ""}} +
                     load_flags() + session_flags(),
                 ""};
    m["tokenize"] = {
        "tokenize", "tokenize -m DIR [--add-special] [--pieces] [TEXT... | < FILE]",
        "Prints the token ids of TEXT (the arguments joined by spaces, or stdin when there are none).\n"
        "Only the tokenizer files of DIR are read.",
        model_flags() + std::vector<FlagSpec>{
                            {"add-special", "", "", "prepend BOS when the tokenizer config says so", ""},
                            {"pieces", "", "", "one token per line: id -> 'piece'", ""},
                            {"prefer-json", "", "", "use tokenizer.json when tokenizer.model exists too", ""},
                        },
        "TEXT..."};
    m["bench"] = {
        "bench", "bench [-m DIR | --synthetic NAME] [-t N[,N...]] [--pp N] [--tg N] [--reps R] [--json]",
        "Measures prefill (pp) and decode (tg) tokens/s with effective GOPS and GB/s and their ratio to this\n"
        "machine's ceilings measured by the same binary.",
        model_flags() +
            std::vector<FlagSpec>{
                {"synthetic", "", "NAME", "a built-in random-weight shape", "llama-3.2-1b"},
                {"weights", "", "TYPE", weights_choices(), kWeightsDefault},
                kActBits,
                kThreadsList,
                {"pp", "", "N", "prompt tokens of the prefill", "512"},
                {"tg", "", "N", "decoded tokens", "128"},
                {"reps", "", "R", "repetitions", "3"},
                {"depth", "", "D[,D...]", "tokens already in the cache before the pp and tg passes, per D (llama-bench -d)", "0"},
                {"json", "", "", "one JSON object per thread count", ""},
                {"kv", "", "TYPE", "KV cache type: f16, f32 or q8 (int8, a scale per 32 values)", "f16"},
                {"ring", "", "", "ring storage for sliding-window layers", ""},
                {"batch", "", "B[,B...]", "aggregate decode of B sequences together, per B (one -t N)", ""},
                {"batch-ctx", "", "C", "--batch: context each sequence holds before decoding", "64"},
                {"json-schema", "", "FILE",
                 "also time the token mask of this JSON Schema in each decode step (a model with a tokenizer)", ""},
            },
        ""};
    m["batch"] = {
        "batch", "batch -m DIR --input F.jsonl --output F.jsonl [--shard I/N | --shards N] [flags]\n"
                 "       staticlm batch --merge --input F.jsonl --output F.jsonl [--shards N | SHARD_FILES...]\n"
                 "       staticlm batch --input F.jsonl --output F.jsonl [--shards N] --verify-against OTHER.jsonl",
        "Runs every request of a JSONL file ({\"id\": ..., \"prompt\": ...} or \"messages\", or OpenAI batch\n"
        "lines) and writes one result line per request; a killed run resumes from its output. Shards split\n"
        "the file for job arrays (Slurm, Kubernetes Indexed Jobs); --merge joins them in input order;\n"
        "--verify-against compares two runs by the digests of their results. See docs/BATCH.md.",
        model_flags() +
            std::vector<FlagSpec>{
                {"input", "", "FILE", "requests, one JSON object per line ('-': stdin)", ""},
                {"output", "", "FILE", "results, one JSON object per line ('-': stdout)", ""},
                {"shard", "", "I/N", "run shard I of N (output FILE.I-of-N)", "Slurm / Kubernetes index, else 0/1"},
                {"shards", "", "N", "shard count (with a job array's index, or for --merge)", ""},
                {"sync", "", "always|end|SEC", "fsync the output after each line, at the end, or every SEC s", "1"},
                {"slots", "", "S", "sequences decoded together", "16"},
                {"prefix-pool", "", "TOKENS", "K/V of shared prompt prefixes held at once (0: no sharing)", "--max-seq"},
                {"prefix-min", "", "N", "shortest prompt prefix shared by 2+ requests that is computed once", "32"},
                {"memory", "", "BYTES", "budget for the KV caches and the prefix pool (K/M/G suffixes)", "this machine's memory"},
                {"plan", "", "", "print the plan (batch size, prefix pool, memory, projected items/hour) and exit", ""},
                {"max-line-bytes", "", "N", "longest request line in bytes", "16777216"},
                {"max-depth", "", "N", "deepest JSON nesting of a request", "16"},
                {"system", "", "TEXT", "system prompt for chat requests", ""},
                {"date", "", "TEXT", "the date Llama 3 templates print", "26 Jul 2024"},
                {"thinking", "", "on|off", "enable_thinking of chat requests that do not set it (Qwen3)", "on"},
                {"merge", "", "", "merge shard outputs into --output", ""},
                {"format", "", "native|openai", "shape of result lines (openai: OpenAI's batch output)", "native"},
                {"verify-against", "", "FILE", "compare --output (or its --shards N files) with FILE by digest; no model", ""},
                {"quiet", "", "", "no progress on stderr", ""},
            } +
            load_flags() + session_flags() + sampling_flags() + generation_flags(256),
        "SHARD_FILES..."};
    m["verify"] = {
        "verify", "verify -m DIR --reference FILE [flags]",
        "Compares the engine's logits with a reference file (input_ids, logits, greedy_ids); exit 1 when\n"
        "a budget is exceeded.",
        model_flags() +
            std::vector<FlagSpec>{
                {"reference", "", "FILE", "reference safetensors (tests/fixtures/*/reference.safetensors)", ""},
                {"weights", "", "TYPE", weights_choices(), kWeightsDefault},
                kActBits,
                {"threads", "t", "N", "threads (0: all CPUs)", "0"},
                {"kv", "", "TYPE", "KV cache type: f16, f32 or q8 (int8, a scale per 32 values)", "f32"},
                {"prefill-buckets", "", "LIST", "prefill block sizes", "the prompt length"},
                {"append-buckets", "", "LIST", "append block sizes", ""},
                {"max-peir", "", "PCT", "PEIR budget in percent", "0.01 for f32 weights, else 1"},
                {"min-top1", "", "F", "minimum top-1 agreement", "0.99"},
                {"min-greedy", "", "F", "minimum greedy token accuracy", "off"},
                {"summary", "", "", "print only the totals", ""},
                {"dump", "", "DIR", "write every named intermediate of a prefill to DIR", ""},
                {"multi-turn", "", "", "prefill, decode, append, decode and compare every position", ""},
                {"turn1", "", "A", "multi-turn: reference tokens of the first prefill", "T/3"},
                {"decode", "", "N", "multi-turn: decode steps after each turn", "4"},
                {"turn2", "", "B", "multi-turn: tokens of the second turn", "the rest"},
                {"append-bucket", "", "Q", "multi-turn: the append bucket", "8"},
                {"max-split-peir", "", "PCT", "multi-turn: append vs decode budget in percent", "0.001"},
            },
        ""};
    m["perplexity"] = {
        "perplexity", "perplexity -m DIR -f FILE [--ctx N] [flags]",
        "Teacher-forced perplexity of a text file in consecutive windows of --ctx tokens.",
        model_flags() +
            std::vector<FlagSpec>{
                {"file", "f", "FILE", "the text ('-': stdin; at most 64 MiB)", ""},
                {"ctx", "", "N", "window in tokens", "min(max_position_embeddings, 512)"},
                {"weights", "", "TYPE", weights_choices(), kWeightsDefault},
                kActBits,
                {"threads", "t", "N", "threads (0: all CPUs)", "0"},
                {"kv", "", "TYPE", "KV cache type: f16, f32 or q8 (int8, a scale per 32 values)", "f32"},
            },
        ""};
    return m;
}

}  // namespace

std::vector<FlagSpec> model_flags() {
    return {{"model", "m", "PATH", "model: a Hugging Face directory (config.json, *.safetensors, tokenizer files), a .gguf file or a llama2.c .bin", ""}};
}

std::vector<FlagSpec> load_flags() {
    return {
        {"weights", "", "TYPE", "weight type after loading: " + weights_choices(),
         kWeightsDefault},
        kActBits,
        {"threads", "t", "N", "threads (0: all CPUs; at most 4 per CPU the process may use)", "0"},
        {"prefer-json", "", "", "use tokenizer.json when tokenizer.model exists too", ""},
    };
}

std::vector<FlagSpec> session_flags() {
    return {
        {"max-seq", "c", "K", "capacity of the KV cache in tokens (prompt + output)",
         "min(2048, the model's trained context)", {"ctx-size"}},
        {"prefill-buckets", "", "LIST", "prompt block sizes", "64,128,256,512 up to K, and K"},
        {"append-buckets", "", "LIST", "block sizes of later chat turns", "16,32,64 up to K, and K"},
        {"kv", "", "TYPE", "KV cache type: f16, f32 or q8 (int8, a scale per 32 values)", "f16"},
        {"ring", "", "", "ring storage for sliding-window layers (less memory, limited rewind)", ""},
    };
}

std::vector<FlagSpec> sampling_flags() {
    return {
        {"temp", "", "T", "temperature; below 1e-6 (0): greedy", "0.8, or generation_config.json"},
        {"top-k", "", "K", "keep the K most likely tokens (0: off)", "40, or generation_config.json"},
        {"top-p", "", "P", "nucleus sampling, in (0, 1] (1: off)", "0.95, or generation_config.json"},
        {"min-p", "", "P", "drop tokens below P x the best one's probability, in [0, 1]",
         "0.05, or generation_config.json"},
        {"repeat-penalty", "", "R", "repetition penalty, in [0.001, 1000] (1: off)", "1.0, or generation_config.json"},
        {"repeat-last-n", "", "N", "tokens the repetition penalty looks back at", "64"},
        {"seed", "s", "S", "random seed", "42"},
    };
}

std::vector<FlagSpec> generation_flags(int default_n) {
    return {
        {"n-predict", "n", "N", "tokens to generate (-1: until EOS or the context is full)", std::to_string(default_n)},
        {"stop", "", "TEXT", "stop when TEXT appears (not printed)", "", {}, true},
        {"ignore-eos", "", "", "do not stop at the model's EOS tokens", ""},
        {"spec", "", "ngram[:N]",
         "prompt-lookup speculative decoding, drafting up to N tokens (1..64) copied from the prompt and text so "
         "far (generate, chat and batch: each request drafts from its own text; docs/RUNTIME.md)",
         "off; N: 8"},
    };
}

const CommandSpec& command_spec(const std::string& name) {
    static const std::map<std::string, CommandSpec> specs = make_specs();
    auto it = specs.find(name);
    if (it == specs.end()) throw UsageError("unknown command '" + name + "' (staticlm --help lists the commands)");
    return it->second;
}

const std::vector<std::string>& command_names() {
    static const std::vector<std::string> names = {"generate", "chat",  "info",      "tokenize",
                                                   "bench",    "verify", "perplexity", "batch"};
    return names;
}

}  // namespace staticlm::cli
