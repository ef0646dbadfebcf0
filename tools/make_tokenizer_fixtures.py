#!/opt/slm-py/bin/python
# Writes tests/fixtures/tokenizers/expected_ids.json: the ids the reference
# libraries give for a fixed corpus, so the C++ tokenizer tests need no Python.
# Pinned: tokenizers==0.23.3 (Hugging Face, PyPI), sentencepiece==0.2.3.
#
# Usage: /opt/slm-py/bin/python tools/make_tokenizer_fixtures.py [DATA_DIR]
# (DATA_DIR defaults to ../shared/data relative to the repository root).
#
# Invalid UTF-8: both libraries take Python str, so a byte string that is not
# valid UTF-8 is defined as bytes.decode("utf-8", "replace") — every maximal
# invalid subpart becomes U+FFFD — before encoding. The C++ side does the same.
import json
import os
import random
import sys

import sentencepiece
import tokenizers

PINNED_TOKENIZERS = "0.23.3"
if tokenizers.__version__ != PINNED_TOKENIZERS:
    sys.exit(f"make_tokenizer_fixtures: need tokenizers=={PINNED_TOKENIZERS}, "
             f"found {tokenizers.__version__}")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data")
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "expected_ids.json")


def corpus():
    """Returns a list of bytes objects (some deliberately not valid UTF-8)."""
    s = []
    prose = [
        "Hello world, once upon a time",
        "Once upon a time, there was a little girl named Lily.",
        "The quick brown fox jumps over the lazy dog.",
        "It's a dog's life; they're here, we've won, I'm sure, you'll see, he'd go.",
        "IT'S LOUD! THEY'RE HERE. WE'VE WON. I'M SURE. YOU'LL SEE. HE'D GO.",
        "Don't stop believing.",
        "She said: \"No way!\" and left (quietly).",
        "A sentence with  two spaces and   three spaces.",
        "Mr. Smith went to Washington D.C. on Jan. 5th, 2021.",
        "e.g., i.e., etc. — and so on…",
        "The cat sat on the mat. The dog sat on the log.",
        "To be, or not to be, that is the question:",
        "Whether 'tis nobler in the mind to suffer",
        "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
        "supercalifragilisticexpialidocious",
        "hello", "Hello", "HELLO", " hello", "  hello", "hello ", "hello  ",
        "a", "I", " ", "  ", "   ", "", "x y z",
        "The year 1984 was followed by 1985.",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
        "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
        "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.",
        "user@example.com https://example.org/path?q=1&r=two#frag",
        "#hashtag @mention $100 50% 3/4 a+b=c x^2 ~tilde `backtick` |pipe|",
        "CamelCaseIdentifier snake_case_identifier kebab-case-identifier",
        "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'Ve 'M 'LL 'D",
        "rock'n'roll o'clock y'all ma'am",
        "'''quoted''' \"\"\"docstring\"\"\"",
    ]
    s += prose
    code = [
        "int main(int argc, char** argv) {\n    return 0;\n}\n",
        "def f(x):\n\treturn x * 2\n",
        "for (size_t i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
        "#include <vector>\n#include \"x.hpp\"\n",
        "if x != None and y >= 3:\n        pass\n",
        "const auto lambda = [&](auto&& v) -> decltype(auto) { return v; };",
        "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
        "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
        "<html><body class=\"x\">Hi</body></html>",
        "x=1;y=2;z=x+y;print(z)",
        "    indented with four spaces",
        "\tindented with a tab",
        "\t\t\tthree tabs\t\tand two",
        "a\tb\tc\td",
        "fn main() {\n    println!(\"{}\", 1_000_000u64);\n}",
        "$ ls -la | grep -v '^d' > out.txt 2>&1",
        "// comment\n/* block\n   comment */\n",
        "std::vector<std::pair<int, float>> v;",
        "0x1F 0b1010 0o17 1e-9 3.14159 -2.5e+10",
        "arr[i][j] += 1; ptr->field; a::b::c",
    ]
    s += code
    ws = [
        "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \n ", "a\nb",
        "a\n\nb", "a \n b", "a  \n  b", "line one\nline two\nline three",
        "trailing spaces   \n", "   leading spaces", "tabs\t\t\tand spaces   mixed \t \t",
        "\t", "\t\t", " \t", "\t ", "a\u00a0b", "a\u2003b", "a\u3000b", "a\u2028b",
        "a\u0085b", "a\u000bb\u000cc", "    \n\n    \n", "x" + " " * 40 + "y",
        "end with newline\n", "\n\nstarts with newlines", "  \t\n\r\n  mixed",
    ]
    s += ws
    digits = [
        "0", "7", "42", "123", "1234", "12345", "123456", "1234567", "3.14159265358979",
        "1,000,000", "2024-06-01", "12:34:56", "+1 (555) 123-4567",
        "31415926535897932384626433832795028841971693993751",
        "a1b2c3", "abc123def", "100%", "$1,234.56", "v1.2.3", "1st 2nd 3rd 4th",
        "٣٤٥ Arabic-Indic digits", "१२३ Devanagari digits", "½ ¾ ² ³ Ⅻ ①",
        "99 bottles of beer on the wall, 99 bottles of beer.",
    ]
    s += digits
    punct = [
        "!!!", "???", "...", "?!", "--", "---", "—", "–", "«quoted»", "‘single’ “double”",
        "(parens) [brackets] {braces} <angles>", "a,b;c:d.e!f?g", "***bold*** __under__",
        "#### heading", "- item\n- item\n* item", "> quote", "@@ -1,3 +1,4 @@",
        "\\backslash\\ /slash/", "\"", "'", "' '", "''", "'s", " 's", "'ss",
    ]
    s += punct
    accents = [
        "café", "naïve résumé", "Crème brûlée", "Ångström", "façade", "Straße", "Øre",
        "Ελληνικά γράμματα", "Русский текст, привет мир!", "עברית", "العربية نص",
        "हिन्दी पाठ", "ภาษาไทย", "Tiếng Việt có dấu", "Ça va? Très bien.",
        "e\u0301 (combining acute)", "n\u0303o", "ﬁ ligature", "İstanbul ıI",
        "ſ long s and 'ſ", "Ǆ ǅ ǆ titlecase", "Ⅰ Ⅱ Ⅲ roman numerals",
    ]
    s += accents
    cjk = [
        "你好，世界！", "日本語のテキストです。", "한국어 텍스트", "中文和English混合",
        "東京タワーは333メートル", "漢字かなカナ", "我爱北京天安门", "𠀀𠀁 rare CJK ext B",
        "｡ ｢ ｣ half-width", "ＦＵＬＬＷＩＤＴＨ １２３",
    ]
    s += cjk
    emoji = [
        "😀", "😀😃😄", "I ❤️ NY", "👍🏽", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "🇺🇸🇯🇵 flags",
        "emoji at end 🎉", "🎉 emoji at start", "a😀b", "🧑🏿‍💻", "✔️ ✅ ❌", "©®™",
        "\u200b zero width space", "\u200d alone", "\ufeffBOM", "\U0001F600\U0001F601",
    ]
    s += emoji
    special = [
        "<|begin_of_text|>Hello", "Hello<|end_of_text|>", "a<|eot_id|>b",
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "<|begin_of_text|><|begin_of_text|>", "< |begin_of_text| >", "<|begin_of_text",
        "<|reserved_special_token_0|> x <|reserved_special_token_1|>",
        "<bos>Hello", "Hello<eos>", "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
        "<start_of_image>", "<unused0> and <unused12>", "<pad><unk><mask>",
        "text <start_of_turn>model\nreply", "<b>bold</b> <bo s>", "<<bos>>",
        "<s>llama2 bos</s>", "[multimodal]", "\n\n\n\n", "▁▁ literal metaspace ▁",
        "<end_of_turn><eos>", "x<|eot_id|><eos>y",
    ]
    s += special
    mixed = [
        "The price is €42.50 (≈ $45).", "Temperature: -3°C / 26.6°F", "π ≈ 3.14, e ≈ 2.718",
        "∑_{i=0}^{n} x_i² ≤ ∞", "→ ← ↑ ↓ ⇒ ⇔", "♠♥♦♣", "🙂 café 123 中文",
        "He said, \"It's 5 o'clock\" — really?", "Q: What's 2+2?\nA: 4.",
        "Item\t$9.99\nTotal\t$19.98\n", "#1 best-seller (2019–2023)",
        "ASCII art:\n  /\\_/\\\n ( o.o )\n  > ^ <\n",
    ]
    s += mixed
    out = [x.encode("utf-8") for x in s]
    # Invalid UTF-8 byte sequences (and valid edge cases) as raw bytes.
    out += [
        b"\xff", b"abc\xffdef", b"\xc3", b"caf\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(",
        b"\xf0\x9f\x98", b"\xf0\x9f\x98 end", b"\x80\x81\x82", b"\xc0\x80 overlong",
        b"\xed\xa0\x80 surrogate", b"\xf4\x90\x80\x80 too large", b"\xf8\x88\x80\x80\x80",
        b"ok \xe4\xb8\xad\xe6\x96 cut", b"\xfe\xfe\xff\xff", b"tab\t\xa0nbsp-byte",
        b"\x00nul\x00", b"\x01\x02\x1f control", b"\x7f del",
    ]
    # Random mixes of the characters the split regex treats differently
    # (letters, digits, apostrophes and contractions, ASCII and Unicode spaces,
    # CR/LF, punctuation, marks, CJK, emoji), from a fixed seed.
    rng = random.Random(1234)
    alphabet = (list("aZ09 '\t\r\n.,!?-_()\"") + ["'s", "'LL", "'re", "  ", "\n\n", " \n"] +
                ["\u00e9", "\u0301", "\u00a0", "\u3000", "\u2028", "\u4e2d", "\u0663", "\u00bd",
                 "\u2162", "\U0001F600", "\u200d", "\u017f", "\u0130", "\u00df", "\u2581", "<bos>",
                 "<|eot_id|>", "1234", "\ufffd"])
    for _ in range(60):
        n = rng.randint(1, 24)
        out.append("".join(rng.choice(alphabet) for _ in range(n)).encode())
    # Longer paragraphs built from the pieces above.
    out.append(("\n".join(prose[:12])).encode())
    out.append(("\n\n".join(code[:6])).encode())
    out.append((" ".join(accents + cjk + emoji)).encode())
    return out


BL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


def split(pattern, behavior, invert=False):
    return {"type": "Split", "pattern": {"String": pattern}, "behavior": behavior, "invert": invert}


def metaspace(scheme, do_split):
    return {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": do_split}


# Pipelines the two real files do not use, built from their vocab and merges
# by replacing top-level components; the C++ test applies the same patches.
VARIANTS = [
    ("llama3_gpt2_bytelevel", "llama3", {
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                          "use_regex": True}}),
    ("llama3_split_next_previous", "llama3", {
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            split(" ", "MergedWithNext"), split("a", "MergedWithPrevious"), BL]}}),
    ("llama3_split_removed_contiguous", "llama3", {
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            split(",", "Removed"), split("e", "Contiguous", invert=True), BL]}}),
    ("gemma3_metaspace_first", "gemma3", {
        "normalizer": None,
        "pre_tokenizer": metaspace("first", True),
        "decoder": {"type": "Sequence", "decoders": [
            metaspace("first", True), {"type": "ByteFallback"}, {"type": "Fuse"}]}}),
    ("gemma3_metaspace_always_nosplit", "gemma3", {
        "normalizer": None,
        "pre_tokenizer": metaspace("always", False),
        "decoder": {"type": "Sequence", "decoders": [
            metaspace("always", False), {"type": "ByteFallback"}, {"type": "Fuse"}]}}),
    ("gemma3_prepend_strip", "gemma3", {
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}}),
]


def hexs(b):
    return b.hex()


def main():
    llama3 = tokenizers.Tokenizer.from_file(os.path.join(DATA, "llama3-tokenizer", "tokenizer.json"))
    gemma3 = tokenizers.Tokenizer.from_file(os.path.join(DATA, "gemma3-tokenizer", "tokenizer.json"))
    llama2 = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(DATA, "llama2-tokenizer", "tokenizer.model"))
    texts = corpus()
    if len(texts) < 200:
        sys.exit(f"make_tokenizer_fixtures: corpus has only {len(texts)} strings")
    cases = []
    for i, b in enumerate(texts):
        t = b.decode("utf-8", "replace")
        c = {"text_hex": hexs(b)}
        for name, tok in (("llama3", llama3), ("gemma3", gemma3)):
            ids = tok.encode(t, add_special_tokens=False).ids
            c[name] = ids
            c[name + "_decoded"] = tok.decode(ids, skip_special_tokens=True)
            if i % 10 == 0:
                c[name + "_with_special"] = tok.encode(t, add_special_tokens=True).ids
        c["llama2"] = llama2.encode(t, out_type=int)
        cases.append(c)
    variants = []
    raw = {name: json.load(open(os.path.join(DATA, name + "-tokenizer", "tokenizer.json")))
           for name in ("llama3", "gemma3")}
    for vname, base, patch in VARIANTS:
        spec = dict(raw[base])
        spec.update(patch)
        tok = tokenizers.Tokenizer.from_str(json.dumps(spec))
        used = list(range(0, len(texts), 2))
        ids, decoded = [], []
        for i in used:
            t = texts[i].decode("utf-8", "replace")
            e = tok.encode(t, add_special_tokens=False).ids
            ids.append(e)
            decoded.append(tok.decode(e, skip_special_tokens=True))
        variants.append({"name": vname, "base": base, "patch": patch, "cases": used,
                         "ids": ids, "decoded": decoded})
    doc = {
        "_note": "Generated by tools/make_tokenizer_fixtures.py; do not edit. text_hex is the "
                 "input bytes; invalid UTF-8 is replaced with U+FFFD (maximal subparts) before "
                 "encoding. llama3/gemma3: tokenizers " + tokenizers.__version__ +
                 " encode(add_special_tokens=False); *_with_special: add_special_tokens=True; "
                 "*_decoded: decode(skip_special_tokens=True). variants: the base file with "
                 "the top-level components in `patch` replaced, ids of every second case. llama2: sentencepiece " +
                 sentencepiece.__version__ + " encode() of llama2-tokenizer/tokenizer.model, no BOS.",
        "tokenizers_version": tokenizers.__version__,
        "sentencepiece_version": sentencepiece.__version__,
        "cases": cases,
        "variants": variants,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
