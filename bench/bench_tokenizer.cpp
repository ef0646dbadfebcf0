// Tokenizer speed: loading tokenizer.json (Gemma 3's 33 MB file, Llama 3) and
// encoding English prose with the Llama 3 tokenizer on one core.
// Run: build/bench/bench_tokenizer  (STATICLM_DATA_DIR overrides ../shared/data)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tokenizer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;

fs::path data_dir() {
    if (const char* env = std::getenv("STATICLM_DATA_DIR")) return env;
    return fs::path(STATICLM_SOURCE_DIR) / ".." / "shared" / "data";
}

// Varied English prose (several paragraphs), repeated to the requested size.
const char* kProse =
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
    "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the "
    "season of Light, it was the season of Darkness, it was the spring of hope, it was the winter "
    "of despair.\n\n"
    "The committee met on Tuesday morning to review the proposal. After a long discussion about "
    "costs, schedules and the risks of delaying the project, the members agreed to approve a "
    "smaller first phase and to revisit the remaining work in March. Several people noted that "
    "the original estimate had been optimistic; others argued that the new plan was too cautious.\n"
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun "
    "with her dog, Max. One day, they found a shiny red ball under a big tree. \"Can we keep it?\" "
    "Lily asked her mother. Her mother smiled and said, \"Yes, but you must share it with your "
    "friends.\" Lily was very happy, and she played with the ball all afternoon.\n\n"
    "Photosynthesis converts light energy into chemical energy: plants absorb carbon dioxide and "
    "water, and release oxygen as a by-product. The process takes place mainly in the leaves, "
    "whose cells contain chloroplasts rich in chlorophyll. Researchers have estimated that about "
    "120 billion tonnes of carbon are fixed this way every year, although the exact figure "
    "varies from one study to another.\n"
    "Meanwhile, in the city, traffic crawled along the wet streets. Shopkeepers pulled down their "
    "shutters, commuters hurried toward the station, and a lone cyclist weaved between the buses, "
    "whistling a tune nobody else could hear. By nine o'clock the rain had stopped, and the "
    "pavements shone under the yellow lamps.\n\n";

std::string prose(size_t bytes) {
    std::string s;
    while (s.size() < bytes) s += kProse;
    s.resize(bytes);
    return s;
}

void BM_load_gemma3(benchmark::State& state) {
    const fs::path dir = data_dir() / "gemma3-tokenizer";
    if (!fs::exists(dir / "tokenizer.json")) return state.SkipWithError("gemma3-tokenizer absent");
    for (auto _ : state) {
        auto tok =
            staticlm::load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
        benchmark::DoNotOptimize(tok.get());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(fs::file_size(dir / "tokenizer.json")));
}
BENCHMARK(BM_load_gemma3)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_load_llama3(benchmark::State& state) {
    const fs::path dir = data_dir() / "llama3-tokenizer";
    if (!fs::exists(dir / "tokenizer.json")) return state.SkipWithError("llama3-tokenizer absent");
    for (auto _ : state) {
        auto tok =
            staticlm::load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
        benchmark::DoNotOptimize(tok.get());
    }
}
BENCHMARK(BM_load_llama3)->Unit(benchmark::kMillisecond)->Iterations(3);

// Encode throughput; the first iteration fills the word cache, later ones
// measure the steady state a server sees.
void encode_bench(benchmark::State& state, const char* name) {
    const fs::path dir = data_dir() / (std::string(name) + "-tokenizer");
    if (!fs::exists(dir / "tokenizer.json")) return state.SkipWithError("tokenizer absent");
    auto tok = staticlm::load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
    const std::string text = prose(static_cast<size_t>(state.range(0)));
    size_t n_ids = 0;
    for (auto _ : state) {
        auto ids = tok->encode(text, false);
        n_ids = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(text.size()));
    state.counters["ids"] = static_cast<double>(n_ids);
}
void BM_encode_llama3(benchmark::State& state) { encode_bench(state, "llama3"); }
void BM_encode_gemma3(benchmark::State& state) { encode_bench(state, "gemma3"); }
BENCHMARK(BM_encode_llama3)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_encode_gemma3)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
