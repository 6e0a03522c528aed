"""A deterministic corpus of varied lines for tokenizer comparisons.

Lines mix many scripts, emoji (with ZWJ sequences, skin tones and flags), runs of spaces,
tabs and line breaks, long numbers, source code, English contractions and the special tokens
of ChatML models, so that every branch of the pre-tokenization regexes and byte handling is
exercised.
"""

import random

WORDS = {
    "latin": ["hello", "world", "Tokenizer", "naïve", "café", "Straße", "über", "déjà", "vu",
              "ångström", "Çà", "œuvre", "ſtop", "ﬁne", "ÆØÅ", "Ɛ", "ǅemal"],
    "greek": ["Καλημέρα", "κόσμε", "λόγος", "Ωμέγα", "ἀλήθεια"],
    "cyrillic": ["Привет", "мир", "Ёжик", "щука", "Україна", "ђак"],
    "arabic": ["مرحبا", "بالعالم", "السَّلامُ", "٣٤٥", "كتاب"],
    "hebrew": ["שלום", "עולם", "בְּרֵאשִׁית"],
    "devanagari": ["नमस्ते", "दुनिया", "हिन्दी", "१२३"],
    "thai": ["สวัสดี", "ชาวโลก", "ภาษาไทย"],
    "cjk": ["你好", "世界", "日本語", "中文分词", "漢字", "龍"],
    "kana": ["こんにちは", "カタカナ", "ひらがな", "ｶﾀｶﾅ"],
    "hangul": ["안녕하세요", "세계", "한국어"],
    "other": ["ሰላም", "გამარჯობა", "Բարեւ", "ᓄᓇᕗᑦ", "𐌰𐌱𐌲", "ꦧꦱꦗꦮ", "ᠮᠣᠩᠭᠣᠯ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
              "Ⅻ", "½", "²³", "①②"],
}
EMOJI = ["😀", "🙂", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "🔥", "🤖", "✨", "🫠", "🏳️‍🌈",
         "☕", "⚡", "🧑🏿‍🚀"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000",
          "\u2003", " \t ", "\n\t", "    ", "\u2028", "\u0085", "\x0b", "\x0c"]
PUNCT = [".", ",", "!", "?", "...", "—", "–", "«", "»", "“", "”", "'", '"', "(", ")", "[", "]",
         "{", "}", ";", ":", "@", "#", "$", "%", "^", "&", "*", "-", "_", "=", "+", "/", "\\",
         "|", "<", ">", "~", "`", "¿", "¡", "。", "、", "！", "？", "·", "•", "€", "£", "¥"]
CONTRACTIONS = ["it's", "I'm", "we'll", "they've", "you're", "he'd", "don't", "IT'S", "We'LL",
                "THEY'VE", "You'Re", "'s", "'t", "rock'n'roll", "o'clock", "x'ſ"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\n",
            "<|im_start|>assistant\n", "<|im_end|>\n", "<file_sep>", "<s>", "</s>", "<unk>"]
# Gemma's control tokens, its user-defined (added, not special) ones, and lookalikes that are
# not tokens.
GEMMA_SPECIALS = ["<bos>", "<eos>", "<pad>", "<mask>", "<unk>", "<start_of_turn>user\n",
                  "<start_of_turn>model\n", "<end_of_turn>\n", "<end_of_turn>",
                  "<start_of_image>", "<end_of_image>", "[multimodal]", "<unused0>",
                  "<unused6241>", "<b>", "</table>", "<s>", "<|im_start|>", "<bos", "<start_of_turn"]
GEMMA_LINES = [
    "<bos>", "<bos><bos>", "<start_of_turn>user\nWho are you?<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>user\n  indented\n\n\n\tand tabbed<end_of_turn>",
    "a  b   c    d     e" + " " * 40 + "f", "\n" * 40 + "x", "\t" * 35 + "y", " \n \n\t \t",
    "<table><tr><td>1</td></tr></table>", "<unused99>text<mask>",
]
CODE = [
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;",
    "if x != y && (z || !w) { return -1; } else { x <<= 2; }",
    "const std::vector<int32_t> &ids = tok.encode(\"hi\");",
    "    indented    code\twith\ttabs   ",
    "lambda s: s.strip().split(',')[::-1]",
    "#include <cstdio>\nint main() { printf(\"%d\\n\", 42); }",
    "x=1;y=2;z=x+y*3/4-5%6",
    "<div class=\"a\">&nbsp;&lt;tag&gt;</div>",
    "$ ls -la | grep '.cpp' > out.txt 2>&1",
]


def number(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return str(rng.randrange(10))
    if kind == 1:
        return str(rng.randrange(10 ** rng.randrange(2, 25)))
    if kind == 2:
        return f"{rng.random() * 10 ** rng.randrange(6):.{rng.randrange(1, 8)}f}"
    if kind == 3:
        return f"{rng.randrange(10**6):,}"
    if kind == 4:
        return "+1-555-" + str(rng.randrange(1000, 9999))
    return "v" + ".".join(str(rng.randrange(20)) for _ in range(3))


def fragment(rng, specials):
    kind = rng.randrange(12)
    if kind <= 3:
        script = rng.choice(list(WORDS))
        return rng.choice(WORDS[script])
    if kind == 4:
        return rng.choice(EMOJI)
    if kind == 5:
        return rng.choice(SPACES)
    if kind == 6:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randrange(1, 4)))
    if kind == 7:
        return number(rng)
    if kind == 8:
        return rng.choice(CONTRACTIONS)
    if kind == 9:
        return rng.choice(specials)
    if kind == 10:
        return rng.choice(CODE)
    # Random code points from assigned blocks, combining marks included.
    block = rng.choice([(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF),
                        (0x400, 0x4FF), (0x600, 0x6FF), (0x900, 0x97F), (0x3040, 0x30FF),
                        (0x4E00, 0x4FFF), (0xAC00, 0xAD00), (0x1F300, 0x1F5FF),
                        (0x2000, 0x206F), (0xFF00, 0xFFEF)])
    return "".join(chr(rng.randint(*block)) for _ in range(rng.randrange(1, 6)))


def corpus(count=1200, seed=0, specials=SPECIALS, extra_lines=()):
    """`count` lines: fixed ones, `extra_lines`, then random ones using `specials`."""
    rng = random.Random(seed)
    lines = [
        "", " ", "  ", "\n", "\t", "a", "Hello world", " Hello", "Hello ", "   leading spaces",
        "trailing spaces   ", "1234567890", " 42", "3.14159", "<|im_start|>", "<|im_start|><|im_end|>",
        "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
        "multiple\n\n\nnewlines\n", "tabs\t\t\tend\t", "mixed \t\n \r\n whitespace",
        "😀😀😀", "日本語のテキスト", "I'LL BE THERE, it's 5 o'clock", "x'ſ ſ'S",
    ] + list(extra_lines)
    while len(lines) < count:
        n = rng.randrange(1, 25)
        parts = []
        for _ in range(n):
            parts.append(fragment(rng, specials))
            if rng.random() < 0.5:
                parts.append(" ")
        lines.append("".join(parts))
    return lines
