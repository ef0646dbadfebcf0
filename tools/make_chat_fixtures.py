#!/usr/bin/env python3
# Renders a few conversations with the real chat templates through
# transformers' apply_chat_template and writes tests/fixtures/chat/chat_cases.json,
# which tests/runtime/test_chat.cpp compares render_chat (and the tokenizer) against.
#
# Templates (tests/fixtures/chat/*.jinja, copied verbatim from llama.cpp's
# models/templates, which fetches them from the Hugging Face hub):
#   meta-llama-Llama-3.1-8B-Instruct.jinja, meta-llama-Llama-3.2-3B-Instruct.jinja,
#   google-gemma-4-31B-it.jinja (the only Gemma 4 template available offline).
# The Llama 3 tokenizer (../shared/data/llama3-tokenizer) carries the older
# Llama 3.0 template (no system block); its renderings are written too, marked
# "llama3.0", to document how it differs.
#
# Usage: /opt/slm-py/bin/python tools/make_chat_fixtures.py   (deterministic, offline)
import json
import pathlib

import transformers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "chat"
SHARED = ROOT.parent / "shared" / "data"
DATE = "26 Jul 2024"  # fixed: the 3.1/3.2 templates otherwise print today's date

CONVERSATIONS = {
    "system_two_turns": [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And times 3?"},
    ],
    "no_system": [
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "Name a colour."},
    ],
    "whitespace_and_unicode": [
        {"role": "system", "content": "  Answer in French.\n"},
        {"role": "user", "content": "\n  Où est la gare ?  \n"},
        {"role": "assistant", "content": " Tout droit, puis à gauche. \n\n"},
        {"role": "user", "content": "Merci ✓"},
    ],
    "single_user": [
        {"role": "user", "content": "Tell me a joke."},
    ],
}


def render(tok, template, messages, **kw):
    return tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                   add_generation_prompt=True, **kw)


def main():
    llama_tok = AutoTokenizer.from_pretrained(SHARED / "llama3-tokenizer")
    # Gemma 4's tokenizer is not available offline: render its text with a
    # tokenizer object that only supplies bos_token "<bos>" (what the template reads).
    gemma_tok = PreTrainedTokenizerFast(tokenizer_file=str(SHARED / "gemma3-tokenizer" / "tokenizer.json"),
                                        bos_token="<bos>", eos_token="<eos>")
    templates = {
        "llama3.1": (OUT / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text(),
        "llama3.2": (OUT / "meta-llama-Llama-3.2-3B-Instruct.jinja").read_text(),
        "gemma4": (OUT / "google-gemma-4-31B-it.jinja").read_text(),
        "llama3.0": llama_tok.chat_template,
    }
    cases = []
    for name, messages in CONVERSATIONS.items():
        for tmpl_name, tmpl in templates.items():
            is_llama = tmpl_name.startswith("llama")
            tok = llama_tok if is_llama else gemma_tok
            kw = {"date_string": DATE} if tmpl_name in ("llama3.1", "llama3.2") else {}
            text = render(tok, tmpl, messages, **kw)
            case = {"name": name, "template": tmpl_name, "date": DATE, "messages": messages,
                    "add_generation_prompt": True, "text": text}
            if is_llama:
                case["ids"] = llama_tok.encode(text, add_special_tokens=False)
            cases.append(case)
    doc = {
        "generator": f"tools/make_chat_fixtures.py, transformers {transformers.__version__}",
        "note": "text = apply_chat_template(messages, add_generation_prompt=True); ids (Llama only) = "
                "llama3-tokenizer encode(text, add_special_tokens=False)",
        "cases": cases,
    }
    (OUT / "chat_cases.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT / 'chat_cases.json'}")


if __name__ == "__main__":
    main()
