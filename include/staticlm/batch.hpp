// Offline batch inference: JSONL requests in, JSONL results out, one complete
// line per result. Resumable (ids already in the output are skipped, a torn
// last line is redone), sharded by a stable hash of the id, and mergeable.
// The generation itself runs on a BatchEngine (docs/BATCH.md has the formats).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/score.hpp"
#include "staticlm/session.hpp"

namespace staticlm {

class Model;
class Tokenizer;
struct BatchSessionOptions;

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

// Bounds on one input line: bytes (the newline excluded) and JSON nesting.
struct RequestLimits {
    size_t max_line_bytes = size_t(16) << 20;
    int max_depth = 16;
};

// What a line asks for when it does not say: the generation options (sampling,
// max_tokens, stop strings) and the seed a request without "seed" derives its
// own from (request_seed).
struct RequestDefaults {
    GenerateOptions generate;
    uint64_t base_seed = 42;
};

// One input line, parsed. A line that cannot be used keeps error_kind/error
// set (and its id when one could be read): it becomes an error result.
struct BatchRequest {
    int line = 0;            // 1-based line of the input
    std::string key;         // "=" + id, or "#" + line when the line has no usable id
    std::string id;          // canonical id: a string id as is, an integer id in decimal
    std::string id_json;     // the id as JSON (string or integer), "null" when absent
    bool chat = false;       // messages (rendered with the chat template) instead of prompt
    std::string prompt;
    std::vector<ChatMessage> messages;
    int thinking = -1;           // "enable_thinking": 1 on, 0 off, -1 the job's ChatOptions::thinking
    bool hide_thinking = false;  // "hide_thinking": the reply's reasoning block is left out of "text"
    GenerateOptions options;
    uint64_t seed = 0;       // options.sampling.seed, kept for the result line
    std::string meta_json;   // "meta" copied to the result, empty when absent
    // "score" / "choices": continuations to score instead of generating
    // (options.logprobs is "logprobs" for a generation).
    std::vector<std::string> score;
    bool choices = false;    // the continuations came as "choices": the result names the best
    // "json_schema" (its JSON text, members in the line's order) or "grammar"
    // (GBNF): constrained output, compiled once per distinct text by the job.
    std::string json_schema;
    std::string grammar;
    bool failed = false;
    ErrorKind error_kind = ErrorKind::input;
    std::string error;
};

// Never throws on bad input: malformed JSON, a missing/invalid id, unknown
// fields, fields of the wrong type or range give a request with `failed`.
// Each line is read in the shape it has: a line with "custom_id" or "body" is
// an OpenAI batch request ({"custom_id", "method", "url", "body": {chat
// completion fields}}), mapped onto the same fields (docs/BATCH.md).
BatchRequest parse_request(std::string_view line, int line_no, const RequestDefaults& defaults,
                           const RequestLimits& limits = {});

// Seed of a request without "seed": the low 31 bits of
// splitmix64(base_seed ^ fnv1a64(id)). The result line records it, so any
// result can be reproduced alone (`staticlm generate --seed S`).
uint64_t request_seed(uint64_t base_seed, std::string_view id);

// ---------------------------------------------------------------------------
// Shards
// ---------------------------------------------------------------------------

// FNV-1a 64 of the bytes of s (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t fnv1a64(std::string_view s);

struct ShardSpec {
    int index = 0;  // 0 .. count-1
    int count = 1;
};

// The shard of a request: fnv1a64(id) % count (id-less lines: of "#<line>").
int shard_of_key(std::string_view key, int count);
// "I/N" -> {I, N}; throws Error(config) when malformed or out of range.
ShardSpec parse_shard(std::string_view text);
// The output file of a shard: "out.jsonl" -> "out.I-of-N.jsonl" (unchanged for
// one shard or "-").
std::string shard_output_path(const std::string& output, ShardSpec shard);

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

// Every result line starts with this marker: files whose complete lines do not
// are not ours, and nothing is appended to them.
inline constexpr std::string_view kResultMarker = "{\"staticlm_batch\":1,";

enum class FinishReason { stop, length, capacity, error, scored };
const char* finish_reason_name(FinishReason reason);

// The shape of result lines: staticlm's own, or OpenAI's batch output
// ({"custom_id", "response": {"status_code", "body": chat.completion}, "error"}).
// Both start with kResultMarker and carry "line" and "digest".
enum class ResultFormat { native, openai };
// "native" / "openai"; throws Error(config) for anything else.
ResultFormat parse_result_format(std::string_view name);
const char* result_format_name(ResultFormat format);

struct ResultOptions {
    ResultFormat format = ResultFormat::native;
    std::string model = "staticlm";  // "model" of OpenAI response bodies
};

struct BatchResult {
    const BatchRequest* request = nullptr;
    FinishReason finish = FinishReason::error;
    std::string text;
    std::vector<int> tokens;
    int prompt_tokens = 0;
    ErrorKind error_kind = ErrorKind::input;
    std::string error;
    GenerateStats stats;
    double total_seconds = 0;  // submitted -> finished
    // A generation with "logprobs": per token, and top_n alternatives each.
    bool has_logprobs = false;
    std::vector<float> logprobs;
    int top_n = 0;
    std::vector<TokenLogprob> top_logprobs;
    // A scoring request: one score per continuation of request->score.
    std::vector<ContinuationScore> scores;
    // A constrained generation: 1 when the output is a complete value, 0 when
    // it stopped inside one (length, capacity); -1 unconstrained.
    int complete = -1;
};

// One complete line, '\n' included (the marker first, then id, finish_reason,
// ...). `tokenizer` gives the "piece" of each token of "logprobs" (omitted
// without one), and the token text and bytes of OpenAI logprobs.
std::string format_result_line(const BatchResult& result, const Tokenizer* tokenizer = nullptr,
                               const ResultOptions& options = {});

// What a result's digest covers, as text: "<finish_reason>:<id>,<id>,..." for
// a generation (the generated ids), "scored:<best>:<tokens>/<greedy 0|1>,..."
// for a scoring line, "error:<kind>" for an error. The digest is FNV-1a 64 of
// that text as 16 lowercase hex digits: equal digests, equal outputs.
std::string result_digest_text(const BatchResult& result);
std::string digest_hex(std::string_view digest_text);

// When results reach the disk: every line (fdatasync after each), at most
// every `seconds`, or only at the end. Each line is one write() in any case,
// so a killed process loses nothing that was written.
struct SyncPolicy {
    enum class Mode { every_line, interval, end } mode = Mode::interval;
    double seconds = 1.0;
};

// One result line of a file, checked: complete (newline-terminated), JSON, with
// the marker and a key.
struct ResultLine {
    std::string key;
    std::string text;  // the line without its newline
    bool error = false;  // finish_reason "error"
    ResultFormat format = ResultFormat::native;
    std::string digest;       // the "digest" it carries ("" for lines written before digests)
    std::string content_digest;  // the digest of what it holds (tokens, scores, error kind)
};

// Reads a results file. Throws Error(format) naming the file and line when a
// complete line is not one of ours (not JSON, no marker, no id); a last line
// without its newline is returned as `torn_bytes` (what a killed writer left).
struct ResultsScan {
    std::vector<ResultLine> lines;
    size_t good_bytes = 0;  // up to the end of the last complete line
    size_t torn_bytes = 0;
};
ResultsScan scan_results(const std::filesystem::path& file, size_t max_line_bytes);

// The output of a job: "-" is stdout (nothing resumed). Otherwise the file is
// created, or scanned: its complete lines are the ids already done, a torn last
// line is cut off, and a file that is not ours is refused. An exclusive lock
// refuses a second writer.
class ResultsWriter {
public:
    // A file whose lines are in the other ResultFormat is refused (one shape per file).
    ResultsWriter(const std::string& path, SyncPolicy sync, size_t max_line_bytes,
                  ResultFormat format = ResultFormat::native);
    ~ResultsWriter();
    ResultsWriter(const ResultsWriter&) = delete;
    ResultsWriter& operator=(const ResultsWriter&) = delete;

    bool done(const std::string& key) const { return done_.count(key) > 0; }
    size_t done_count() const { return done_.size(); }
    size_t torn_bytes_dropped() const { return torn_; }
    // Appends one complete line with one write() (repeated only after a short write).
    void append(std::string_view line);
    void sync();  // fdatasync now
    const std::string& path() const { return path_; }

private:
    std::string path_;
    int fd_ = -1;
    bool is_stdout_ = false;
    SyncPolicy sync_;
    double last_sync_ = 0;
    size_t torn_ = 0;
    std::unordered_map<std::string, int> done_;  // key -> line in the file
};

// ---------------------------------------------------------------------------
// Engines: what generates. The job submits up to capacity() requests and
// steps; finished requests come back in any order.
// ---------------------------------------------------------------------------

// A shared prompt prefix, planned by BatchJob (docs/BATCH.md): the first
// `use` prompt tokens are the first `use` of `tokens`, whose K/V the engine
// computes once (at the first request naming `key`) into its prefix pool and
// copies for every other request. `last`: no later request names `key`, the
// entry is freed after this one.
struct EnginePrefix {
    uint64_t key = 0;
    std::shared_ptr<const std::vector<int>> tokens;  // the whole shared run (the entry)
    int use = 0;  // 0: no prefix
    bool last = false;
};

// Work done by an engine since it was made (positions are token rows).
struct EngineCounters {
    long prompt_positions = 0;  // prompt rows computed, the prefix pool's included
    long shared_positions = 0;  // prompt rows copied from the prefix pool instead
    long prefixes = 0;          // prefixes computed into the pool
};

// One measured prefill step and one measured decode step of an engine (for
// `staticlm batch --plan`'s projection).
struct StepTimes {
    int prefill_rows = 0;
    double prefill_seconds = 0;
    int decode_rows = 0;
    double decode_seconds = 0;
};

struct EngineRequest {
    uint64_t tag = 0;
    EnginePrefix prefix;
    std::vector<int> prompt;
    GenerateOptions options;
    // Non-empty: score these continuations after the prompt (score_continuations
    // on a session with the engine's options and all_logits) instead of generating.
    std::vector<std::vector<int>> score;
};

struct EngineOutcome {
    uint64_t tag = 0;
    GenerateResult result;
    std::vector<ContinuationScore> scores;  // a scoring request's
    bool failed = false;
    ErrorKind error_kind = ErrorKind::input;
    std::string error;
    double total_seconds = 0;
};

class BatchEngine {
public:
    virtual ~BatchEngine() = default;
    virtual int capacity() const = 0;  // sequences in flight at once
    virtual int active() const = 0;
    // Needs active() < capacity(). Throws Error for a request that cannot run
    // (prompt too long, bad settings); failures found later come from step().
    virtual void submit(EngineRequest request) = 0;
    // Advances every active sequence; appends those that finished (or failed).
    virtual void step(std::vector<EngineOutcome>& finished) = 0;
    // Ends the running request with this tag now, keeping what it generated
    // (StopReason::aborted), and gives its outcome; false when no running
    // request has the tag (scoring requests finish at submit).
    virtual bool cancel(uint64_t tag, EngineOutcome& out) = 0;

    // Prefix sharing. prefix_limit: the longest prefix the engine can hold (0:
    // none). prompt_rows_exact: whether processing T prompt tokens from
    // position P as this engine does (P == 0: a prompt's or prefix's prefill;
    // P > 0: the rest of a prompt after a prefix, `scoring` for a scoring
    // request) computes every row as any other split would, so that results
    // with and without a prefix are bit-identical.
    virtual int prefix_limit() const { return 0; }
    virtual bool prompt_rows_exact(int /*P*/, int /*T*/, bool /*scoring*/) const { return false; }
    // Whether the prefix pool holds the entry `key` now (a full pool gives up
    // its least recently used entries for new ones).
    virtual bool prefix_held(uint64_t /*key*/) const { return false; }
    virtual EngineCounters counters() const { return {}; }
    // Times one prefill step and one decode step of all slots (nothing active).
    virtual StepTimes measure_steps() { return {}; }
};

// The static memory of a batched engine: every slot's KV cache, the scoring
// session's (made at the first scoring line), the prefix pool. The budget is
// PrefixOptions::memory_budget, or this machine's memory.
struct PrefixOptions {
    // The prefix pool in tokens: 0 = no sharing (the library's default: an
    // engine fed without BatchJob's planning would not use it), -1 = max_seq
    // (`staticlm batch`'s default).
    int pool_tokens = 0;
    uint64_t memory_budget = 0;    // bytes for the caches and the pool; 0: physical memory
};
struct BatchMemory {
    uint64_t slot_caches = 0;   // all slots
    uint64_t scorer_cache = 0;
    uint64_t pool = 0;
    int pool_tokens = 0;
    uint64_t budget = 0;        // 0: unknown
    uint64_t total() const { return slot_caches + scorer_cache + pool; }
};
BatchMemory batch_memory(const Model& model, const BatchSessionOptions& options, const PrefixOptions& prefix);
// Throws Error(capacity) naming the pool, the slots and the budget when
// batch_memory() does not fit in it (before anything is allocated).
void check_batch_memory(const BatchMemory& memory);

// One sequence at a time on a Session, through generate(): the reference the
// batched engine must equal.
std::unique_ptr<BatchEngine> make_sequential_engine(std::shared_ptr<const Model> model,
                                                    const SessionOptions& session);

// Continuous batching on a BatchGenerator (include/staticlm/batch_session.hpp):
// up to options.slots sequences decoded together; each result equals the
// sequential engine's. prefill_budget: as BatchGenerator's. With a prefix
// pool (PrefixOptions), shared prompt prefixes are computed once; the memory
// is checked first (check_batch_memory).
struct BatchSessionOptions;
std::unique_ptr<BatchEngine> make_batched_engine(std::shared_ptr<const Model> model,
                                                 const BatchSessionOptions& options, int prefill_budget = 0,
                                                 const PrefixOptions& prefix = {});
std::unique_ptr<BatchEngine> make_batched_engine(std::shared_ptr<const Model> model,
                                                 const BatchSessionOptions& options, const PrefixOptions& prefix);

// Shared prefixes found as requests come, for callers that submit one at a
// time (the C API's slm_batch) where BatchJob plans a whole window. A
// generation whose prompt starts with at least `min_len` tokens of an entry
// the engine's pool holds uses the longest part of that run after which its
// rows are computed exactly (BatchEngine::prompt_rows_exact), so its result
// is bit-identical to the one without sharing; one that shares no such run
// with any entry becomes an entry itself (its prompt less its last token, at
// most the engine's prefix_limit). The pool gives up its least recently used
// entries for new ones. Scoring requests are left as they are.
class PrefixPlanner {
public:
    explicit PrefixPlanner(int min_len);
    // Sets request.prefix (left empty when nothing is shared).
    void plan(EngineRequest& request, const BatchEngine& engine);

private:
    struct Entry {
        uint64_t key = 0;
        std::shared_ptr<const std::vector<int>> tokens;
    };
    int min_len_;
    uint64_t next_key_ = 1;
    std::vector<Entry> entries_;  // planned; pruned of those the pool no longer holds
};

// ---------------------------------------------------------------------------
// The job
// ---------------------------------------------------------------------------

struct BatchProgress {
    int total = 0;       // requests of this shard
    int skipped = 0;     // already in the output before this run
    int done = 0;        // written by this run (errors included)
    int errors = 0;      // of done
    long generated_tokens = 0;
    double seconds = 0;  // since run() started
    // The engine's work in this run (EngineCounters): prompt rows computed and
    // copied from the prefix pool, prefixes computed.
    long prompt_positions = 0;
    long shared_positions = 0;
    long prefixes = 0;
    // Speculation (--spec): tokens the written results drafted, and of those accepted.
    long drafted_tokens = 0;
    long accepted_tokens = 0;
};

struct BatchJobOptions {
    std::string input = "-";   // JSONL path, "-" for stdin
    std::string output = "-";  // results path (already the shard's), "-" for stdout
    ShardSpec shard;
    ResultOptions result;  // the shape of result lines
    RequestDefaults defaults;
    RequestLimits limits;
    SyncPolicy sync;
    ChatFormat chat_format = ChatFormat::plain;
    ChatOptions chat;
    // Shared prefixes: runs of at least this many prompt tokens that two or
    // more requests of the shard start with are computed once (0: off).
    int prefix_min = 32;
    // Requests are tokenized and their prefixes planned this many at a time,
    // so the memory for token ids does not grow with the input; a prefix
    // shared across two windows is computed once in each.
    int plan_window = 4096;
    std::function<void(const BatchProgress&)> progress;  // after each result (and at start)
};

struct BatchSummary {
    int input_lines = 0;
    BatchProgress progress;
    size_t torn_bytes_dropped = 0;
};

// Construction reads and checks the input (duplicate ids are an error up
// front, before anything is written) and opens the output: every check that
// needs no model happens here, so a bad invocation fails before loading one.
class BatchJob {
public:
    explicit BatchJob(BatchJobOptions options);
    ~BatchJob();
    BatchJob(const BatchJob&) = delete;
    BatchJob& operator=(const BatchJob&) = delete;

    int input_lines() const;
    int shard_requests() const;   // requests of this shard
    int pending() const;          // of those, not yet in the output
    const std::string& output_path() const;
    ShardSpec shard() const;
    size_t torn_bytes_dropped() const;  // an incomplete last line cut from the output

    // What run() would do on this engine (`staticlm batch --plan`): the
    // pending requests tokenized and their shared prefixes found.
    struct Plan {
        int requests = 0;            // pending, usable
        int scoring = 0;             // of those, score/choices lines
        long max_new_tokens = 0;     // sum of n_predict of the generations
        long score_positions = 0;    // continuation tokens of the scoring lines
        int prefixes = 0;            // shared prefixes
        int longest_prefix = 0;
        int sharing_requests = 0;    // requests that start from one
        long prompt_positions = 0;   // prompt rows computed without sharing
        long shared_prompt_positions = 0;  // with sharing (the prefixes once each)
    };
    Plan plan(const Model& model, const BatchEngine& engine);

    // Tokenizes and runs every pending request of the shard on the engine,
    // appending one line per result. Throws only when the output cannot be
    // written (results written so far stay).
    BatchSummary run(const Model& model, BatchEngine& engine);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Reads every request key of an input file in order (ids of all shards);
// throws Error(input) on a duplicate id.
std::vector<BatchRequest> read_requests(const std::string& input, const RequestDefaults& defaults,
                                        const RequestLimits& limits);

// Checks that the shard files together hold every request of the input exactly
// once (and nothing else), then writes them in input order to output ("-":
// stdout; a file is written whole, then renamed into place). Throws Error
// naming the missing, duplicated or unknown ids and their files.
struct MergeSummary {
    int requests = 0;
    int errors = 0;  // results with finish_reason "error"
};
MergeSummary merge_results(const std::string& input, const std::vector<std::string>& shards,
                           const std::string& output, const RequestLimits& limits = {});

// Compares two runs of the same input by digest: `ours` and `theirs` are each
// one results file or the shard files of one run (either ResultFormat). Every
// line's digest is checked against what the line holds first (a line edited
// by hand or damaged is "altered"). Throws Error for a file that cannot be
// read, is not a results file, or holds an id twice.
struct VerifyReport {
    int requests = 0;  // in the input
    int same = 0;
    std::vector<std::string> differ;         // ids (as keys: "=id" / "#line") with different digests
    std::vector<std::string> missing_ours;   // with no result in `ours`
    std::vector<std::string> missing_theirs;
    std::vector<std::string> altered;        // "FILE line N: ..." lines whose digest does not match them
    bool ok() const {
        return differ.empty() && missing_ours.empty() && missing_theirs.empty() && altered.empty();
    }
};
VerifyReport verify_results(const std::string& input, const std::vector<std::string>& ours,
                            const std::vector<std::string>& theirs, const RequestLimits& limits = {});

}  // namespace staticlm
