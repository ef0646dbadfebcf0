"""Finds or builds llama.cpp's command-line tools for the comparison scripts.

The llama.cpp the figures are compared with is the one the pinned llama-cpp-python
sdist vendors (PyPI is reachable where GitHub is not): `pip download --no-binary
:all:` fetches the sdist, its vendor/llama.cpp is built with cmake (native CPU
flags, OpenMP, no network code), and the tools are used as they are
(llama-bench, llama-batched-bench, llama-quantize, llama-perplexity).

  LLAMA_CPP_BIN=/path/to/bin    use tools built elsewhere (a folder holding llama-bench)
  LLAMA_CPP_CMAKE_ARGS="..."    extra cmake flags for the build (e.g. -DGGML_AMX_INT8=OFF)
  --llama-cpp-dir DIR           where the sdist is fetched and built (default /tmp/staticlm-llamacpp)
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile

SDIST = ("llama-cpp-python", "0.3.36")
TOOLS = ("llama-bench", "llama-batched-bench", "llama-quantize", "llama-perplexity")


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def source_dir(workdir):
    """The vendored llama.cpp source of the pinned sdist, fetched and unpacked once."""
    name, version = SDIST
    root = os.path.join(workdir, f"{name.replace('-', '_')}-{version}")
    src = os.path.join(root, "vendor", "llama.cpp")
    if os.path.isfile(os.path.join(src, "CMakeLists.txt")):
        return src
    os.makedirs(workdir, exist_ok=True)
    archives = glob.glob(os.path.join(workdir, f"{name.replace('-', '_')}-{version}.tar.gz"))
    if not archives:
        _log(f"fetching the {name} {version} sdist (its vendored llama.cpp) into {workdir}")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                        f"{name}=={version}", "-d", workdir], check=True, stdout=subprocess.DEVNULL)
        archives = glob.glob(os.path.join(workdir, f"{name.replace('-', '_')}-{version}.tar.gz"))
    if not archives:
        raise SystemExit(f"pip download gave no {name}-{version} sdist in {workdir}")
    with tarfile.open(archives[0]) as tar:
        members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name + "/"]
        try:
            tar.extractall(workdir, members=members, filter="data")
        except TypeError:  # a Python without extraction filters (before 3.11.4)
            tar.extractall(workdir, members=members)
    if not os.path.isfile(os.path.join(src, "CMakeLists.txt")):
        raise SystemExit(f"{archives[0]} has no vendor/llama.cpp")
    return src


def build(src, jobs):
    """Builds the tools in src/build (Release, -march=native through GGML_NATIVE)."""
    if shutil.which("cmake") is None:
        raise SystemExit("cmake is needed to build llama.cpp: apt-get install cmake")
    out = os.path.join(src, "build")
    if not os.path.isfile(os.path.join(out, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", src, "-B", out, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON",
                        "-DGGML_OPENMP=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_SERVER=OFF",
                        "-DLLAMA_BUILD_TESTS=OFF", *os.environ.get("LLAMA_CPP_CMAKE_ARGS", "").split()],
                       check=True, stdout=subprocess.DEVNULL)
    _log(f"building llama.cpp tools in {out} (-j{jobs}; minutes on a 2-core machine)")
    subprocess.run(["cmake", "--build", out, f"-j{jobs}", "--target", *TOOLS], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(out, "bin")


def tools(workdir="/tmp/staticlm-llamacpp", jobs=None):
    """A dict tool name -> path; builds them when LLAMA_CPP_BIN is unset and they are missing."""
    bindir = os.environ.get("LLAMA_CPP_BIN")
    if not bindir:
        src = source_dir(workdir)
        bindir = os.path.join(src, "build", "bin")
        if not all(os.access(os.path.join(bindir, t), os.X_OK) for t in TOOLS):
            bindir = build(src, jobs or os.cpu_count() or 2)
    found = {t: os.path.join(bindir, t) for t in TOOLS}
    missing = [p for p in found.values() if not os.access(p, os.X_OK)]
    if missing:
        raise SystemExit(f"llama.cpp tools missing: {', '.join(missing)}")
    return found


def version(bins):
    """llama.cpp's build number and commit as llama-bench reports them."""
    r = subprocess.run([bins["llama-bench"], "--version"], capture_output=True, text=True)
    text = (r.stdout + r.stderr).strip().splitlines()
    return text[0] if text else "unknown"


def bench(bins, model, threads, pp=0, tg=0, depth=0, reps=1, flash=1):
    """One llama-bench run: {'pp': tok/s or None, 'tg': tok/s or None} at a depth.

    Weights are read into memory at load (--load-mode none, as staticlm reads its
    arena), flash attention on (its fastest CPU attention, and the one -d is meant for)."""
    cmd = [bins["llama-bench"], "-m", model, "-t", str(threads), "-p", str(pp), "-n", str(tg), "-d", str(depth),
           "-r", str(reps), "-fa", str(flash), "--load-mode", "none", "-o", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    out = {"pp": None, "tg": None}
    for rec in json.loads(r.stdout):
        key = "pp" if rec["n_prompt"] > 0 and rec["n_gen"] == 0 else "tg"
        out[key] = rec["avg_ts"]
    return out


def quantize(bins, src, dst, qtype, threads):
    """llama-quantize src -> dst as qtype (e.g. Q4_K_M), unless dst exists."""
    if os.path.exists(dst):
        return dst
    r = subprocess.run([bins["llama-quantize"], src, dst + ".tmp", qtype, str(threads)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"llama-quantize {src} {qtype} failed:\n{r.stderr[-2000:]}")
    os.replace(dst + ".tmp", dst)
    return dst
