// `staticlm batch --plan` and the prefix pool flags end to end (the built
// binary, STATICLM_BIN, on stories260K): the plan names the batch size, the
// pool, the memory and a projection and writes nothing; a pool that cannot
// fit in --memory is refused by --plan and by the run alike, before any
// output exists; a run prints the prompt rows it computed and copied.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace fs = std::filesystem;

namespace {

std::string bin() {
    const char* b = std::getenv("STATICLM_BIN");
    return b ? b : "";
}

using staticlm::test::read_file;
using staticlm::test::TempDir;

// Runs `staticlm ARGS` (no shell quoting needed for the arguments used here);
// returns the exit status with stdout and stderr in files.
int run(const std::string& args, const std::string& out, const std::string& err) {
    std::string cmd = "'";  // (built by appends: GCC 12 warns falsely on "'" + std::string)
    cmd += bin();
    cmd += "' " + args + " >'" + out + "' 2>'" + err + "'";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST_CASE("batch --plan and the prefix pool: the plan, a pool that cannot fit, the counts of a run") {
    if (bin().empty()) {
        MESSAGE("SKIPPED: STATICLM_BIN is not set (meson test sets it)");
        return;
    }
    if (!staticlm::test::have_shared_data("batch --plan")) return;
    TempDir dir;
    const std::string in = dir / "in.jsonl", res = dir / "res.jsonl";
    std::string instr = "Read the story and answer with one word.\n";
    for (int i = 0; i < 8; ++i) instr += "Line " + std::to_string(i) + ": the dog and the cat play in the sun.\n";
    {
        std::ofstream f(in);
        for (int i = 0; i < 12; ++i)
            f << nlohmann::json({{"id", i},
                                 {"prompt", instr + "Story " + std::to_string(i) + ": Tom is"},
                                 {"choices", {" happy", " sad"}}})
                     .dump()
              << "\n";
    }
    const std::string model = (staticlm::test::shared_data() / "stories260K-hf").string();
    const std::string base = "batch -m '" + model + "' --input '" + in + "' --output '" + res +
                             "' --threads 1 --max-seq 256 --quiet --slots 4";

    const std::string out = dir / "out.txt", err = dir / "err.txt";
    REQUIRE(run(base + " --plan", out, err) == 0);
    const std::string plan = read_file(out);
    MESSAGE(plan);
    for (const char* needle : {"sequences/batch   4", "prefix pool       256 tokens", "shared prefixes   1, used by 12",
                               "memory", "projected", "items/hour with sharing"})
        CHECK_MESSAGE(plan.find(needle) != std::string::npos, needle);
    CHECK_FALSE(fs::exists(res));  // the plan writes nothing

    // stories260K keeps 640 bytes of K/V per token: 10^6 tokens do not fit in 64 MiB.
    for (const char* extra : {" --plan", ""}) {
        INFO("extra flags:" << extra);
        CHECK(run(base + " --memory 64M --prefix-pool 1000000" + extra, out, err) == 1);
        const std::string e = read_file(err);
        CHECK_MESSAGE(e.find("prefix pool of 1000000 tokens") != std::string::npos, e);
        CHECK_MESSAGE(e.find("--prefix-pool") != std::string::npos, e);
        CHECK_FALSE(fs::exists(res));
    }
    CHECK(run(base + " --memory lots", out, err) == 2);
    CHECK(read_file(err).find("--memory") != std::string::npos);
    CHECK(run(base + " --prefix-pool -3", out, err) == 2);

    // A run: every result, and the rows it computed and copied on stderr.
    const std::string run_base = "batch -m '" + model + "' --input '" + in + "' --output '" + res +
                                 "' --threads 1 --max-seq 256 --slots 4";
    REQUIRE(run(run_base, out, err) == 0);
    const std::string e = read_file(err);
    CHECK_MESSAGE(e.find("copied from 1 shared prefixes") != std::string::npos, e);
    std::istringstream lines(read_file(res));
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n)
        CHECK(nlohmann::json::parse(line)["finish_reason"] == "scored");
    CHECK(n == 12);
}
